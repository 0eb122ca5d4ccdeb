"""Relevance and ``min_score``: every fusion method's score on one [0, 1] scale, recomputed by
numpy (and the standard library's normal CDF) from the definitions; the threshold equals
filtering one unthresholded ranking; through the API, the server and the command line."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pytest
from cli_process import error_line, ok
from live_oracle import QUERIES, document, new_engine

from hybrid_engine import HybridIndex
from hybrid_engine.pipeline.fusion import METHODS, fuse
from hybrid_engine.pipeline.relevance import relevance
from hybrid_engine.result import PAD_ID, SearchResult

N_DOCS = 60


@pytest.fixture(scope="module")
def engine() -> HybridIndex:
    return new_engine([document(i) for i in range(N_DOCS)])


def _expected(scores: np.ndarray, method: str, total: float, n_lists: int) -> np.ndarray:
    """The relevance of fused ``scores`` by the documented definition of each scale."""
    best = {"rrf": total / 61, "combsum": total, "combmnz": total * n_lists}
    if method == "zscore":
        values = np.vectorize(NormalDist().cdf)(np.where(np.isfinite(scores), scores, 0.0))
    elif method in best:
        values = scores / best[method]
    else:
        values = scores
    return np.where(np.isfinite(scores), np.clip(values, 0, 1), -np.inf)


def test_a_hit_first_in_every_leg_has_relevance_one() -> None:
    legs = [
        SearchResult(np.array([[1, 2, 3]]), np.array([[9.0, 5.0, 1.0]], np.float32)),
        SearchResult(np.array([[1, 3, 2]]), np.array([[0.9, 0.8, 0.1]], np.float32)),
    ]
    for method in ("rrf", "minmax", "combsum", "combmnz"):
        fused = fuse(legs, 3, method=method)
        assert fused.ids[0, 0] == 1
        assert relevance(fused.scores, method, None, 2)[0, 0] == pytest.approx(1.0)
    weighted = fuse(legs, 3, method="rrf", weights=[2.0, 0.5])
    assert relevance(weighted.scores, "rrf", [2.0, 0.5], 2)[0, 0] == pytest.approx(1.0)


@pytest.mark.parametrize("method", METHODS)
def test_relevance_is_each_methods_score_on_its_documented_scale(
    engine: HybridIndex, method: str
) -> None:
    result = engine.search(QUERIES, 30, fusion=method, weights={"bm25": 1.0, "dense": 3.0})
    assert result.relevance is not None and result.relevance_scale
    expected = _expected(result.scores.astype(np.float64), method, 4.0, 2)
    assert np.allclose(result.relevance, expected, atol=1e-6)
    hit = result.ids != PAD_ID
    assert np.all((result.relevance[hit] >= 0) & (result.relevance[hit] <= 1))
    assert np.all(np.diff(np.where(hit, result.relevance, -1.0), axis=1) <= 1e-7)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("min_score", [0.2, 0.5, 0.8])
def test_min_score_filters_one_ranking(engine: HybridIndex, method: str, min_score: float) -> None:
    whole = engine.search(QUERIES, N_DOCS, fusion=method)
    kept = engine.search(QUERIES, 10, fusion=method, min_score=min_score)
    assert kept.relevance is not None and whole.relevance is not None
    for row in range(len(QUERIES)):
        passing = [
            int(i)
            for i, value in zip(whole.ids[row], whole.relevance[row], strict=True)
            if i != PAD_ID and value >= min_score
        ]
        assert [int(i) for i in kept.ids[row] if i != PAD_ID] == passing[:10]


def test_min_score_with_mmr_and_pages(engine: HybridIndex) -> None:
    whole = engine.search(QUERIES, N_DOCS)
    assert whole.relevance is not None
    fused = {
        (row, int(i)): float(value)
        for row in range(len(QUERIES))
        for i, value in zip(whole.ids[row], whole.relevance[row], strict=True)
        if i != PAD_ID
    }
    diverse = engine.search(QUERIES, 8, mmr=0.3, min_score=0.4)
    assert diverse.relevance is not None
    for row in range(len(QUERIES)):
        for i, value in zip(diverse.ids[row], diverse.relevance[row], strict=True):
            if i != PAD_ID:  # MMR re-orders; each hit keeps its fused relevance
                assert value == pytest.approx(fused[row, int(i)]) and value >= 0.4
    first = engine.search(QUERIES, 20, min_score=0.3)
    second = engine.search(QUERIES, 10, offset=10, min_score=0.3)
    assert np.array_equal(second.ids, first.ids[:, 10:])


@pytest.mark.parametrize(
    ("min_score", "error"),
    [(-0.1, ValueError), (1.5, ValueError), ("0.5", TypeError), (True, TypeError)],
)
def test_a_bad_min_score_is_refused(engine: HybridIndex, min_score: object, error: type) -> None:
    with pytest.raises(error, match="min_score"):
        engine.search(QUERIES, 5, min_score=min_score)  # type: ignore[arg-type]


def test_the_server_and_the_command_line_take_min_score(
    engine: HybridIndex, tmp_path: Path
) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from hybrid_engine.server import create_app

    http = TestClient(create_app(engine))
    answer = http.post("/search", json={"queries": QUERIES, "k": 10, "min_score": 0.6})
    assert answer.status_code == 200, answer.text
    got = [[hit["id"] for hit in result["hits"]] for result in answer.json()["results"]]
    assert got == engine.search(QUERIES, 10, min_score=0.6).doc_ids
    assert http.post("/search", json={"query": "cat", "min_score": 1.5}).status_code == 422

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(document(i)) + "\n" for i in range(N_DOCS)))
    ok("index", corpus, tmp_path / "index", "--retrievers", "bm25", "--quiet")
    whole = json.loads(ok("search", tmp_path / "index", "snow wind", "-k", "60", "--json"))
    strict = json.loads(
        ok("search", tmp_path / "index", "snow wind", "--min-score", "0.7", "--json")
    )
    assert 0 < len(strict["hits"]) < len(whole["hits"])
    assert strict["hits"] == whole["hits"][: len(strict["hits"])]
    problem = error_line("search", tmp_path / "index", "cat", "--min-score", "2")
    assert "argument --min-score: expected a number in [0, 1], got 2" in problem
