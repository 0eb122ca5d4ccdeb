"""MMR reads only the candidates' rows of ``doc_vectors``: memory, finiteness and results."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from hybrid_engine.pipeline.mmr import mmr
from hybrid_engine.result import PAD_ID, SearchResult


def greedy_mmr(
    query: np.ndarray, docs: np.ndarray, row_ids: np.ndarray, k: int, lam: float
) -> tuple[list[int], list[float]]:
    """Plain-numpy greedy MMR over float64: ties to the lowest position, redundancy floored
    at 0; picks in the order they were made, with their marginal relevance."""
    pool = sorted({int(i) for i in row_ids if i != PAD_ID})
    rows = {p: docs[p].astype(np.float64) for p in pool}
    q = query.astype(np.float64)
    picked: list[int] = []
    values: list[float] = []
    while pool and len(picked) < k:
        best, best_value = -1, -np.inf
        for d in pool:
            redundancy = max([0.0] + [float(rows[d] @ rows[s]) for s in picked])
            value = lam * float(rows[d] @ q) - (1 - lam) * redundancy
            if value > best_value:
                best, best_value = d, value
        picked.append(best)
        values.append(best_value)
        pool.remove(best)
    return picked, values


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _candidates(rng: np.random.Generator, n_queries: int, width: int, n_docs: int) -> SearchResult:
    ids = rng.integers(PAD_ID, n_docs, size=(n_queries, width)).astype(np.int64)
    return SearchResult(ids, np.zeros(ids.shape, np.float32))


def test_peak_memory_is_far_below_a_float64_copy_of_the_corpus() -> None:
    """200k x 64 float32 is 51 MB, its float64 copy 102 MB: only the 4 x 30 rows are read."""
    rng = np.random.default_rng(0)
    docs = np.ones((200_000, 64), np.float32)
    queries = _unit(rng.normal(size=(4, 64)))
    cands = _candidates(rng, 4, 30, len(docs))
    tracemalloc.start()
    try:
        mmr(cands, queries, docs, 10)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 10 * 2**20, f"mmr allocated {peak / 2**20:.1f} MiB at its peak"


def test_a_non_finite_row_outside_the_candidates_is_not_read() -> None:
    docs = _unit(np.random.default_rng(1).normal(size=(5, 3)))
    docs[4] = np.nan
    cands = SearchResult(np.array([[0, 2, 3, PAD_ID]]), np.zeros((1, 4), np.float32))
    result = mmr(cands, np.ones((1, 3)), docs, 3)
    assert sorted(result.ids[0].tolist()) == [0, 2, 3]


def test_a_non_finite_candidate_row_is_refused() -> None:
    docs = _unit(np.ones((5, 3)))
    docs[2, 1] = np.inf
    cands = SearchResult(np.array([[0, 2]]), np.zeros((1, 2), np.float32))
    with pytest.raises(ValueError, match="finite"):
        mmr(cands, np.ones((1, 3)), docs, 2)


def test_positions_are_checked_before_rows_are_gathered() -> None:
    docs = _unit(np.ones((5, 3)))
    cands = SearchResult(np.array([[0, 5]]), np.zeros((1, 2), np.float32))
    with pytest.raises(ValueError, match="candidate positions"):
        mmr(cands, np.ones((1, 3)), docs, 2)


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.5, 1.0])
def test_equals_greedy_reference_on_a_read_only_memmap(tmp_path: Path, lam: float) -> None:
    rng = np.random.default_rng(2)
    vectors = _unit(rng.normal(size=(500, 16)))
    np.save(tmp_path / "vectors.npy", vectors)
    docs = np.load(tmp_path / "vectors.npy", mmap_mode="r")
    queries = _unit(rng.normal(size=(6, 16)))
    cands = _candidates(rng, 6, 40, len(docs))
    k = 12
    result = mmr(cands, queries, docs, k, lambda_=lam)
    for row in range(len(queries)):
        picked, values = greedy_mmr(queries[row], vectors, cands.ids[row], k, lam)
        # float32 scores may tie where float64 values did not: ties go to the lower position.
        expected = sorted(zip(picked, values), key=lambda p: (-np.float32(p[1]), p[0]))
        n = len(expected)
        assert result.ids[row, :n].tolist() == [p for p, _ in expected]
        np.testing.assert_allclose(
            result.scores[row, :n], [v for _, v in expected], rtol=1e-5, atol=1e-6
        )
        assert (result.ids[row, n:] == PAD_ID).all()
