"""What the server says about a request before and beside the engine: a body sent without a
JSON content type is a 415 saying so, a 422 never echoes a huge input back, a filter
comparing a field with a value of another type is a 400 naming the field, and ``GET /stats``
describes the index served."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dense_oracle import HashingEncoder
from live_oracle import document, new_engine

from hybrid_engine import HybridIndex

pytest.importorskip("fastapi", reason="the serve extra is not installed")
pytest.importorskip("httpx", reason="the serve extra is not installed")
from fastapi.testclient import TestClient

from hybrid_engine.server import MAX_IDS, create_app
from hybrid_engine.server.guards import MAX_ECHO_CHARS, MAX_ERRORS


@pytest.fixture
def http() -> TestClient:
    return TestClient(create_app(new_engine([document(i) for i in range(10)])))


BODIES = [
    ("POST", "/search", {"query": "cat"}),
    ("POST", "/documents", {"documents": [document(50)]}),
    ("DELETE", "/documents", {"ids": ["d1"]}),
]
"""A valid request of each endpoint with a body."""


@pytest.mark.parametrize(("method", "path", "body"), BODIES, ids=lambda v: str(v)[:20])
@pytest.mark.parametrize(
    "content_type",
    ["application/x-www-form-urlencoded", "text/plain", "application/xml", None],
    ids=str,
)
def test_a_body_without_a_json_content_type_is_415_saying_so(
    http: TestClient, method: str, path: str, body: Any, content_type: str | None
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    response = http.request(method, path, content=json.dumps(body).encode(), headers=headers)
    assert response.status_code == 415, response.text
    detail = response.json()["detail"]
    assert "Content-Type: application/json" in detail
    assert (content_type or "no Content-Type") in detail
    assert http.get("/health").json()["staged"] == {"added": 0, "deleted": 0}


@pytest.mark.parametrize(("method", "path", "body"), BODIES, ids=lambda v: str(v)[:20])
@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "application/x+json"]
)
def test_a_json_content_type_is_accepted(
    http: TestClient, method: str, path: str, body: Any, content_type: str
) -> None:
    headers = {"Content-Type": content_type}
    response = http.request(method, path, content=json.dumps(body).encode(), headers=headers)
    assert response.status_code == 200, response.text


def test_a_422_does_not_echo_a_huge_query(http: TestClient) -> None:
    query = "x" * 1_000_000
    response = http.post("/search", json={"query": query})
    assert response.status_code == 422
    assert len(response.content) < 10 * MAX_ECHO_CHARS
    inputs = [e["input"] for e in response.json()["detail"]]
    assert inputs and all(
        i == "x" * MAX_ECHO_CHARS + "... (1000000 characters, cut)" for i in inputs
    )
    assert "String should have at most 100000 characters" in response.text


def test_a_422_echoes_small_inputs_whole_and_lists_a_bounded_number_of_errors(
    http: TestClient,
) -> None:
    small = http.post("/search", json={"query": "cat", "k": "5"})
    assert small.status_code == 422
    assert [e["input"] for e in small.json()["detail"]] == ["5"]
    many = http.request("DELETE", "/documents", json={"ids": [True] * MAX_IDS})
    assert many.status_code == 422
    detail = many.json()["detail"]
    assert len(detail) == MAX_ERRORS + 1
    assert detail[-1]["msg"] == f"{MAX_IDS - MAX_ERRORS} more errors not shown"
    assert [e["loc"] for e in detail[:3]] == [["body", "ids", i] for i in range(3)]


def test_a_filter_on_a_value_of_another_type_is_400_naming_the_field(http: TestClient) -> None:
    """Needs the engine's type check of filters (issue 24, defect 8): fails before it."""
    response = http.post("/search", json={"query": "cat", "filter": {"group": "one"}})
    assert response.status_code == 400, response.text
    assert "group" in response.json()["detail"]


def test_stats_describe_the_index_served(tmp_path: Path) -> None:
    engine = new_engine([document(i) for i in range(10)])
    engine.save(tmp_path / "index")
    http = TestClient(create_app(engine))
    http.post("/documents", json={"documents": [document(20), document(21)]})
    http.request("DELETE", "/documents", json={"ids": ["d1"]})
    before = http.get("/stats").json()
    sizes = sum(f.stat().st_size for f in (tmp_path / "index").rglob("*") if f.is_file())
    assert before == {
        "documents": 10,
        "segments": 1,
        "retrievers": ["bm25", "dense"],
        "staged": {"added": 2, "deleted": 1},
        "generation": before["generation"],
        "models": {"dense": None},  # HashingEncoder: no prepared model
        "path": str(tmp_path / "index"),
        "disk_bytes": sizes,
    }
    http.post("/commit")
    after = http.get("/stats").json()
    assert after["generation"] == before["generation"] + 1
    assert (after["documents"], after["segments"]) == (11, 2)
    assert after["staged"] == {"added": 0, "deleted": 0}
    assert after["disk_bytes"] > before["disk_bytes"]
    engine.close()
    reread = HybridIndex.load(tmp_path / "index", encoder=HashingEncoder())
    assert reread.generation == after["generation"]


def test_stats_of_an_index_in_memory_have_no_path(http: TestClient) -> None:
    stats = http.get("/stats").json()
    assert (stats["path"], stats["disk_bytes"], stats["documents"]) == (None, None, 10)


def test_damaged_index_files_a_search_read_are_503_not_the_clients_400() -> None:
    """An ``IndexFormatError`` is a ``ValueError``, but no fault of the request: 503."""
    from fastapi import HTTPException

    from hybrid_engine.errors import IndexFormatError
    from hybrid_engine.server.app import engine_errors

    with pytest.raises(HTTPException) as info, engine_errors():
        raise IndexFormatError("idx/seg-000000/bm25: the postings of term 5 are malformed")
    assert info.value.status_code == 503 and "postings of term 5" in info.value.detail
