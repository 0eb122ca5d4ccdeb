"""Writes through the server: a document without ``_id`` gets a new id that no user's id can
equal, and every write reply lists the ids it staged; an ``_id`` follows one rule
(``hybrid_engine.ids``: a string or an integer); a document the engine would refuse at commit
is refused when posted; ``POST /rollback`` drops what is staged; ``GET /documents/{id}``
reads a committed document back."""

from __future__ import annotations

from typing import Any

import pytest
from live_oracle import QUERIES, document, live_documents, new_engine

from hybrid_engine import HybridIndex

pytest.importorskip("fastapi", reason="the serve extra is not installed")
pytest.importorskip("httpx", reason="the serve extra is not installed")
from fastapi.testclient import TestClient

from hybrid_engine.server import create_app


def numbered(i: int) -> dict[str, Any]:
    """Document ``i`` with the id ``str(i)``, as a corpus of numbered documents has."""
    return {**document(i), "_id": str(i)}


@pytest.fixture
def users() -> list[dict[str, Any]]:
    """42 documents numbered "3".."43" and "1408": a counter of the documents indexed (the
    server's ids before issue 24) would give "42", "43", "44" next, two of them a user's."""
    return [numbered(i) for i in range(3, 44)] + [numbered(1408)]


def test_documents_without_ids_never_take_or_replace_a_users_id(
    users: list[dict[str, Any]],
) -> None:
    engine = new_engine(users)
    http = TestClient(create_app(engine))
    new = [{"title": "zebra", "text": f"zebra giraffe {i}"} for i in range(3)]
    added = http.post("/documents", json={"documents": new})
    assert added.status_code == 200, added.text
    ids = added.json()["ids"]
    assert added.json()["staged"] == 3 and len(set(ids)) == 3
    assert not set(ids) & {d["_id"] for d in users}
    upserted = http.post("/documents", json={"documents": [{"text": "okapi"}], "upsert": True})
    assert upserted.status_code == 200, upserted.text
    (upsert_id,) = upserted.json()["ids"]
    assert upsert_id not in {d["_id"] for d in users} | set(ids)
    assert http.post("/commit").json()["documents"] == len(users) + 4
    for doc in users:
        got = http.get(f"/documents/{doc['_id']}")
        assert got.status_code == 200, got.text
        assert got.json() == doc  # unchanged
    for doc_id, doc in zip([*ids, upsert_id], [*new, {"title": "", "text": "okapi"}], strict=True):
        assert http.get(f"/documents/{doc_id}").json() == {**doc, "_id": doc_id, "metadata": {}}


def test_an_id_is_a_string_or_an_integer_taken_as_its_decimal_string() -> None:
    engine = new_engine([document(i) for i in range(5)])
    http = TestClient(create_app(engine))
    staged = http.post("/documents", json={"documents": [{"_id": 1408, "text": "numbered"}]})
    assert staged.json() == {"staged": 1, "ids": ["1408"]}
    refused = http.post("/documents", json={"documents": [{"_id": "1408", "text": "again"}]})
    assert refused.status_code == 409  # 1408 and "1408" are one document
    http.post("/commit")
    assert http.get("/documents/1408").json()["_id"] == "1408"
    assert [d["_id"] for d in live_documents(engine)][-1] == "1408"
    deleted = http.request("DELETE", "/documents", json={"ids": [1408, "d0"]})
    assert deleted.json() == {"staged": 2, "ids": ["1408", "d0"]}


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        (True, "is bool"),
        (False, "is bool"),
        ("", "is empty"),
        (" d9", "leading or trailing whitespace"),
        ("d9\n", "leading or trailing whitespace"),
        ("a\tb", "control character"),
        (1.5, "is float"),
        ("x" * 513, "more than 512"),
        (2**64, "send it as a string"),
    ],
)
def test_a_bad_id_is_422_naming_the_field_and_the_rule(value: Any, phrase: str) -> None:
    engine = new_engine([document(i) for i in range(5)])
    http = TestClient(create_app(engine))
    posted = http.post("/documents", json={"documents": [{"_id": value, "text": "t"}]})
    assert posted.status_code == 422
    (error,) = posted.json()["detail"]
    assert error["loc"] == ["body", "documents", 0, "_id"]
    assert phrase in error["msg"]
    deleted = http.request("DELETE", "/documents", json={"ids": ["d1", value]})
    assert deleted.status_code == 422
    (error,) = deleted.json()["detail"]
    assert error["loc"] == ["body", "ids", 1] and phrase in error["msg"]
    assert not engine.has_staged and len(engine) == 5


def test_rollback_drops_every_staged_change_and_says_what() -> None:
    engine = new_engine([document(i) for i in range(10)])
    http = TestClient(create_app(engine))
    before = [http.post("/search", json={"query": q, "k": 5}).json()["results"] for q in QUERIES]
    http.post("/documents", json={"documents": [document(20), document(21)]})
    http.post("/documents", json={"documents": [document(3, version=1)], "upsert": True})
    http.request("DELETE", "/documents", json={"ids": ["d4", "d20"]})
    # d20 and d21 added, d20 deleted again; d3 replaced: d3 and d4 to delete, d21 and d3 to add
    assert http.get("/health").json()["staged"] == {"added": 2, "deleted": 2}
    assert http.post("/rollback").json() == {"dropped": {"added": 2, "deleted": 2}}
    assert http.get("/health").json()["staged"] == {"added": 0, "deleted": 0}
    assert http.post("/rollback").json() == {"dropped": {"added": 0, "deleted": 0}}
    assert http.post("/commit").json()["documents"] == 10
    assert live_documents(engine) == [document(i) for i in range(10)]
    after = [http.post("/search", json={"query": q, "k": 5}).json()["results"] for q in QUERIES]
    assert after == before


def test_a_document_the_commit_would_refuse_is_400_when_posted() -> None:
    """Needs the engine's validation at staging (issue 24, defect 2): fails before it."""
    engine = new_engine([document(i) for i in range(5)])  # BM25 + dense
    http = TestClient(create_app(engine))
    refused = http.post("/documents", json={"documents": [document(7), {"_id": "e1", "text": ""}]})
    assert refused.status_code == 400, refused.text
    assert "e1" in refused.json()["detail"]
    assert http.get("/health").json()["staged"] == {"added": 0, "deleted": 0}
    assert http.post("/documents", json={"documents": [document(7)]}).status_code == 200
    committed = http.post("/commit")
    assert committed.status_code == 200, committed.text
    assert [d["_id"] for d in live_documents(engine)] == [f"d{i}" for i in range(5)] + ["d7"]


def test_get_document_reads_the_last_commit_or_is_404_naming_the_id() -> None:
    engine: HybridIndex = new_engine([document(i) for i in range(5)])
    http = TestClient(create_app(engine))
    assert http.get("/documents/d2").json() == document(2)
    http.post("/documents", json={"documents": [{"_id": "a/b c", "text": "slash"}]})
    missing = http.get("/documents/a%2Fb%20c")
    assert missing.status_code == 404
    assert "'a/b c'" in missing.json()["detail"] and "POST /commit" in missing.json()["detail"]
    http.post("/commit")
    got = http.get("/documents/a%2Fb%20c").json()
    assert got == {"_id": "a/b c", "title": "", "text": "slash", "metadata": {}}
    assert http.get("/documents/%20d2").status_code == 422
