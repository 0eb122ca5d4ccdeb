"""Facets: each field's value counts equal a brute-force count over the documents the search
matched (the fused candidates: every leg's top ``depth`` inside the filter, above
``min_score``), recomputed from each leg's own search and the documents' metadata; through the
API, the server and the command line."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_process import error_line, ok
from live_oracle import QUERIES, document

from hybrid_engine import BM25Index, HybridIndex
from hybrid_engine.result import PAD_ID

N_DOCS = 80


def _document(i: int) -> dict[str, Any]:
    doc = document(i)
    doc["metadata"]["tags"] = [["a", "b"], ["b"], [], ["a", "a", "c"]][i % 4]
    doc["metadata"]["mixed"] = [1, 1.0, True, "1"][i % 4]
    if i % 5 == 0:
        del doc["metadata"]["lang"]
    return doc


@pytest.fixture(scope="module")
def engine() -> HybridIndex:
    return HybridIndex.build([_document(i) for i in range(N_DOCS)], retrievers=("bm25",))


def _expected(docs: list[dict[str, Any]], fields: list[str]) -> dict[str, list[tuple[Any, int]]]:
    """Each field's counts over ``docs``, by hand: one per distinct (type, value) a document
    holds, most frequent first, ties by the value's repr."""
    out = {}
    for name in fields:
        counter: Counter[tuple[str, Any]] = Counter()
        for doc in docs:
            if name in doc["metadata"]:
                value = doc["metadata"][name]
                items = value if isinstance(value, list) else [value]
                counter.update({(type(v).__name__, v) for v in items})
        pairs = [(value, n) for (_, value), n in counter.items()]
        out[name] = sorted(pairs, key=lambda pair: (-pair[1], repr(pair[0])))
    return out


FIELDS = ["lang", "group", "tags", "mixed", "absent"]


@pytest.mark.parametrize("where", [None, {"group": {"$in": [0, 3]}}])
@pytest.mark.parametrize("depth", [5, 100])
def test_facets_count_the_matched_documents(
    engine: HybridIndex, where: dict[str, Any] | None, depth: int
) -> None:
    docs = [_document(i) for i in range(N_DOCS)]
    by_id = {doc["_id"]: doc for doc in docs}
    # The matched documents, brute force: BM25 alone (the engine's one leg) to depth.
    oracle = BM25Index.build(docs)
    allowed = [
        i
        for i, doc in enumerate(docs)
        if where is None or doc["metadata"]["group"] in where["group"]["$in"]
    ]
    result = engine.search(QUERIES, 3, facets=FIELDS, filter=where, depth=depth)
    assert result.facets is not None
    for row, query in enumerate(QUERIES):
        hits = oracle.search([query], N_DOCS)
        matched = [docs[int(i)] for i in hits.ids[0] if i != PAD_ID and int(i) in allowed][:depth]
        expected = _expected(matched, FIELDS)
        assert result.facets[row] == expected
        assert sum(n for _, n in expected["group"]) == len(matched)
        assert [hit.id for hit in result.hits()[row]] == [d["_id"] for d in matched][:3]
        assert all(by_id[hit.id] in matched for hit in result.hits()[row])


def test_facets_follow_min_score_and_leave_the_hits_alone(engine: HybridIndex) -> None:
    plain = engine.search(QUERIES, 4)
    counted = engine.search(QUERIES, 4, facets=["group"], min_score=0.5)
    strict = engine.search(QUERIES, N_DOCS, min_score=0.5)
    assert counted.facets is not None and strict.relevance is not None
    for row in range(len(QUERIES)):
        above = int(np.sum(strict.ids[row] != PAD_ID))
        assert sum(n for _, n in counted.facets[row]["group"]) == above
    assert np.array_equal(engine.search(QUERIES, 4, facets=["group"]).ids, plain.ids)
    assert plain.facets is None


@pytest.mark.parametrize(
    ("facets", "error"),
    [("lang", TypeError), ([], ValueError), ([""], TypeError), ([3], TypeError)],
)
def test_bad_facets_are_refused(engine: HybridIndex, facets: object, error: type) -> None:
    with pytest.raises(error, match="facets"):
        engine.search(QUERIES, 3, facets=facets)  # type: ignore[arg-type]


def test_the_server_and_the_command_line_count_facets(engine: HybridIndex, tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from hybrid_engine.server import create_app

    expected = engine.search(QUERIES, 3, facets=["lang", "mixed"]).facets
    assert expected is not None
    http = TestClient(create_app(engine))
    answer = http.post("/search", json={"queries": QUERIES, "k": 3, "facets": ["lang", "mixed"]})
    assert answer.status_code == 200, answer.text
    for got, want in zip(answer.json()["results"], expected, strict=True):
        assert got["facets"] == {
            name: [{"value": v, "count": n} for v, n in pairs] for name, pairs in want.items()
        }
    plain = http.post("/search", json={"query": "cat", "k": 3}).json()["results"][0]
    assert "facets" not in plain
    assert http.post("/search", json={"query": "cat", "facets": []}).status_code == 422

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(_document(i)) + "\n" for i in range(N_DOCS)))
    ok("index", corpus, tmp_path / "index", "--retrievers", "bm25", "--quiet")
    line = ok("search", tmp_path / "index", QUERIES[0], "-k", "3", "--facets", "lang", "--json")
    assert json.loads(line)["facets"] == {
        "lang": [{"value": v, "count": n} for v, n in expected[0]["lang"]]
    }
    listing = ok("search", tmp_path / "index", QUERIES[0], "-k", "3", "--facets", "lang,tags")
    assert "  facet lang: " in listing and "  facet tags: " in listing
    problem = error_line("search", tmp_path / "index", "cat", "--facets", "lang,,x")
    assert "argument --facets: expected FIELD[,FIELD...]" in problem
