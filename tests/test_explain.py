"""``explain``: each hit's rank and score in each leg equal its place in that leg's own
ranking (the snapshot's leg searches, as fusion got them); through the server."""

from __future__ import annotations

import numpy as np
import pytest
from live_oracle import QUERIES, document, new_engine

from hybrid_engine import HybridIndex
from hybrid_engine.result import PAD_ID


@pytest.fixture(scope="module")
def engine() -> HybridIndex:
    return new_engine([document(i) for i in range(50)])


def _places(engine: HybridIndex, leg: str, depth: int) -> list[dict[str, tuple[int, float]]]:
    """Each query's doc id -> (1-based rank, score) in ``leg``'s own top ``depth``."""
    snapshot = engine._state.snapshot
    allowed = snapshot.allowed(None)
    if leg == "bm25":
        found = snapshot.search_bm25(QUERIES, depth, None, allowed)
    else:
        assert engine.encoder is not None
        found = snapshot.search_dense(engine.encoder.encode(QUERIES), depth, None, allowed)
    return [
        {
            engine.doc_ids[int(i)]: (rank, float(s))
            for rank, (i, s) in enumerate(zip(found.ids[row], found.scores[row], strict=True), 1)
            if i != PAD_ID
        }
        for row in range(len(QUERIES))
    ]


@pytest.mark.parametrize("depth", [5, 100])
def test_each_hit_has_its_place_in_each_leg(engine: HybridIndex, depth: int) -> None:
    result = engine.search(QUERIES, 10, depth=depth)
    width = max(depth, 10)  # each leg hands fusion at least k hits
    expected = {leg: _places(engine, leg, width) for leg in ("bm25", "dense")}
    explained = result.explain()
    for row, hits in enumerate(result.hits()):
        assert len(explained[row]) == len(hits)
        for hit, places in zip(hits, explained[row], strict=True):
            for leg in ("bm25", "dense"):
                if hit.id in expected[leg][row]:
                    rank, score = expected[leg][row][hit.id]
                    assert places[leg][0] == rank
                    assert np.isclose(places[leg][1], score, rtol=1e-6)
                else:
                    assert leg not in places
            assert places  # every fused hit came from some leg


def test_the_server_explains_when_asked(engine: HybridIndex) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from hybrid_engine.server import create_app

    http = TestClient(create_app(engine))
    answer = http.post("/search", json={"queries": QUERIES, "k": 3, "explain": True})
    assert answer.status_code == 200, answer.text
    expected = engine.search(QUERIES, 3).explain()
    for result, rows in zip(answer.json()["results"], expected, strict=True):
        got = [
            {leg: (place["rank"], place["score"]) for leg, place in hit["legs"].items()}
            for hit in result["hits"]
        ]
        assert got == [{leg: (r, pytest.approx(s)) for leg, (r, s) in row.items()} for row in rows]
    plain = http.post("/search", json={"query": "cat", "k": 1}).json()["results"][0]["hits"][0]
    assert "legs" not in plain


def test_the_command_line_explains_and_highlights(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    from cli_process import ok

    docs = [document(i) for i in range(30)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    ok("index", corpus, tmp_path / "index", "--retrievers", "bm25", "--quiet")
    engine = HybridIndex.load(tmp_path / "index")
    expected = engine.search("river stone", k=3)
    engine.close()
    line = ok(
        "search", tmp_path / "index", "river stone", "-k", "3", "--explain", "--highlight", "--json"
    )
    hits = json.loads(line)["hits"]
    assert [hit["highlight"] for hit in hits] == expected.highlights()[0]
    assert [
        {leg: (place["rank"], pytest.approx(place["score"])) for leg, place in hit["legs"].items()}
        for hit in hits
    ] == expected.explain()[0]
    listing = ok("search", tmp_path / "index", "river stone", "-k", "3", "--explain", "--highlight")
    assert "bm25 #1 (" in listing and "[stone]" in listing
