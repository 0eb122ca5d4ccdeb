"""Maximal marginal relevance against a plain-Python greedy oracle."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_engine.pipeline.mmr import mmr
from hybrid_engine.result import SearchResult


def oracle(query: list[float], docs: list[list[float]], pool: list[int], k: int, lam: float):
    """Carbonell and Goldstein's greedy MMR with lists and loops; ties to the lowest position;
    redundancy floored at 0."""

    def dot(a: list[float], b: list[float]) -> float:
        return math.fsum(x * y for x, y in zip(a, b))

    picked: list[int] = []
    values: list[float] = []
    remaining = sorted(set(p for p in pool if p >= 0))
    while remaining and len(picked) < k:
        best, best_value = None, -math.inf
        for d in remaining:
            redundancy = max([0.0] + [dot(docs[d], docs[s]) for s in picked])
            value = lam * dot(query, docs[d]) - (1 - lam) * redundancy
            if value > best_value:
                best, best_value = d, value
        picked.append(best)
        values.append(best_value)
        remaining.remove(best)
    return picked, values


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_hand_made_diversity() -> None:
    """Two near-duplicates and one different document: MMR takes the different one second."""
    docs = np.array([[1.0, 0.0], [0.99, 0.141], [0.6, 0.8]])
    docs = _unit(docs)
    query = _unit(np.array([[0.95, 0.31]]))
    cands = SearchResult(np.array([[0, 1, 2]]), np.zeros((1, 3), np.float32))
    by_relevance = mmr(cands, query, docs, 3, lambda_=1.0).ids[0].tolist()
    assert by_relevance == list(np.argsort(-(docs @ query[0])))
    diverse = mmr(cands, query, docs, 3, lambda_=0.5).ids[0].tolist()
    assert diverse[1] == 2  # not the near-duplicate of the first pick


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    n_docs=st.integers(1, 12),
    k=st.integers(1, 8),
    lam=st.floats(0.0, 1.0),
    width=st.integers(1, 10),
)
def test_matches_oracle(seed: int, n_docs: int, k: int, lam: float, width: int) -> None:
    rng = np.random.default_rng(seed)
    docs = _unit(rng.normal(size=(n_docs, 6)))
    queries = _unit(rng.normal(size=(3, 6)))
    ids = rng.integers(-1, n_docs, size=(3, width))
    cands = SearchResult(ids.astype(np.int64), np.zeros(ids.shape, np.float32))
    result = mmr(cands, queries, docs, k, lambda_=lam)
    for row in range(3):
        picked, values = oracle(queries[row].tolist(), docs.tolist(), ids[row].tolist(), k, lam)
        got = [int(i) for i in result.ids[row] if i >= 0]
        # The returned float32 scores may tie where float64 values did not: ascending position.
        expected = sorted(zip(picked, values), key=lambda p: (-np.float32(p[1]), p[0]))
        assert got == [p for p, _ in expected]
        np.testing.assert_allclose(
            result.scores[row][: len(got)], [v for _, v in expected], rtol=1e-5, atol=1e-6
        )
        assert list(result.ids[row][len(got) :]) == [-1] * (min(k, width) - len(got))
        scores = result.scores[row][: len(got)]
        assert all(scores[i] >= scores[i + 1] for i in range(len(got) - 1))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"k": 0}, "k must be"),
        ({"lambda_": 1.5}, "lambda_"),
        ({"queries": np.zeros((2, 2))}, "one vector per query"),
        ({"queries": np.zeros((1, 3))}, "same number of columns"),
        ({"docs": np.full((3, 2), np.nan)}, "finite"),
        ({"ids": np.array([[0, 7]])}, "candidate positions"),
    ],
)
def test_errors(kwargs: dict, match: str) -> None:
    docs = kwargs.get("docs", _unit(np.ones((3, 2))))
    ids = kwargs.get("ids", np.array([[0, 1]]))
    cands = SearchResult(ids, np.zeros(ids.shape, np.float32))
    queries = kwargs.get("queries", np.ones((1, 2)))
    with pytest.raises(ValueError, match=match):
        mmr(cands, queries, docs, kwargs.get("k", 2), lambda_=kwargs.get("lambda_", 0.5))
