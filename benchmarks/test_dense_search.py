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
(see ``benchmarks/reports/bench_dense_recall.py`` to measure it, and recall, on real embeddings).
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
    _time_single_queries(benchmark, side, _index(n), queries, f"dense-{n // 1000}k-1q-k{K}")


def _time_single_queries(
    benchmark: Any, side: str, index: Any, queries: np.ndarray, group: str
) -> None:
    """200 one-query ``search`` calls per round, one hnswlib thread."""
    exact = side == "exact"
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


# -- real embeddings: all-MiniLM-L6-v2 over 100,000 scale documents ----------------------------

REAL_DOCS = 100_000


@pytest.fixture(scope="module")
def real_embeddings(shared_data: Any, msmarco_queries: list[str]) -> tuple[Any, np.ndarray]:
    """(HNSW index over 100k real document embeddings, 1,000 MS MARCO query embeddings).

    The slice is every 2nd scale document (gcide, wordnet, Wikipedia summaries), as in
    ``benchmarks/reports/embed_scale.py``; embeddings come from the embedding cache, so run that
    script once first (encoding 100k documents takes about half an hour on 2 cores).
    """
    from bench_common import load_scale_texts

    from hybrid_engine import DenseIndex, EmbeddingCache, Encoder, ModelNotFoundError

    try:
        encoder = Encoder.load()
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
    cache = EmbeddingCache()
    docs = cache.encode(encoder, load_scale_texts(shared_data)[::2][:REAL_DOCS])
    queries = cache.encode(encoder, msmarco_queries[:1000])
    return DenseIndex.from_vectors(docs, exact_threshold=0), queries


@pytest.mark.scale
@pytest.mark.parametrize("side", SIDES)
def test_single_query_real_100k(benchmark, side, real_embeddings):
    index, queries = real_embeddings
    if side == "hnsw":
        found = index.search(queries, K).ids
        truth = index.search(queries, K, exact=True).ids
        recall = np.mean([len(set(f) & set(t)) / K for f, t in zip(found, truth)])
        benchmark.extra_info["recall_at_10"] = float(recall)
        print(f"\nHNSW recall@{K} vs exact, {len(queries)} queries: {recall:.4f}")
    group = f"dense-real-{REAL_DOCS // 1000}k-1q-k{K}"
    _time_single_queries(benchmark, side, index, queries, group)
