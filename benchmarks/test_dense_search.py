"""Dense search speed: ``DenseIndex`` through its HNSW graph against its exact numpy path.

Both sides search the same index (built once per size with ``exact_threshold=0``, default
``m``, ``ef_construction`` and ``ef_search``), over synthetic clustered unit vectors of 384
dimensions (``bench_common.clustered_vectors``: MiniLM's size), with query vectors from the
same mixture; the exact side passes ``exact=True``. Query encoding is not included.

* ``dense-{n}-1q-k10``: single-query latency, one ``search`` call per query over 200 queries,
  one hnswlib thread (the exact side's matrix product uses the BLAS threads).
* ``dense-{n}-1000q-k10``: one call with 1,000 queries, default threads on both sides.

Ratios ``exact_over_hnsw`` = median time of the exact side / of HNSW: above 1, the graph is
faster. Where it crosses 1 for single queries is what ``DEFAULT_EXACT_THRESHOLD`` is set from
(see ``scripts/bench_dense_recall.py`` to measure it, and recall, on real embeddings).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from bench_common import clustered_vectors, record_ratio

DIM = 384
K = 10
SIDES = ["hnsw", "exact"]
_INDEXES: dict[int, Any] = {}


def _index(n: int) -> Any:
    from hybrid_engine import DenseIndex

    if n not in _INDEXES:
        _INDEXES[n] = DenseIndex.from_vectors(clustered_vectors(n, DIM, seed=0), exact_threshold=0)
    return _INDEXES[n]


@pytest.fixture(scope="module")
def queries() -> np.ndarray:
    return clustered_vectors(1000, DIM, seed=1)


def _single_queries(benchmark: Any, side: str, n: int, queries: np.ndarray) -> None:
    index, exact = _index(n), side == "exact"
    group = f"dense-{n // 1000}k-1q-k{K}"
    benchmark.group = group

    def run() -> None:
        for query in queries[:200]:
            index.search(query, K, exact=exact, num_threads=1)

    benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1)
    benchmark.extra_info["queries_per_call"] = 200
    record_ratio(benchmark, group, side, reference="hnsw")


def _batch(benchmark: Any, side: str, n: int, queries: np.ndarray) -> None:
    index, exact = _index(n), side == "exact"
    group = f"dense-{n // 1000}k-1000q-k{K}"
    benchmark.group = group
    result = benchmark.pedantic(
        index.search, args=(queries, K), kwargs={"exact": exact}, rounds=3, warmup_rounds=1
    )
    assert result.ids.shape == (len(queries), K)
    record_ratio(benchmark, group, side, reference="hnsw")


@pytest.mark.parametrize("side", SIDES)
def test_single_query_20k(benchmark, side, queries):
    _single_queries(benchmark, side, 20_000, queries)


@pytest.mark.parametrize("side", SIDES)
def test_batch_20k(benchmark, side, queries):
    _batch(benchmark, side, 20_000, queries)


@pytest.mark.scale
@pytest.mark.parametrize("side", SIDES)
def test_single_query_200k(benchmark, side, queries):
    _single_queries(benchmark, side, 200_000, queries)


@pytest.mark.scale
@pytest.mark.parametrize("side", SIDES)
def test_batch_200k(benchmark, side, queries):
    _batch(benchmark, side, 200_000, queries)
