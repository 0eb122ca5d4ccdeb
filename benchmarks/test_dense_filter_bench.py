"""Filtered dense search speed: ``DenseIndex.search(allowed=mask)`` against hnswlib's own
``filter=`` callback on the same graph, with the same ``k`` and ``ef``.

One index of 10,000 synthetic clustered 384-d unit vectors (``bench_common.clustered_vectors``)
built with ``exact_threshold=0`` and the default ``m``, ``ef_construction``, ``ef_search``;
query vectors from the same mixture. For each selectivity (the allowed fraction of a seeded
random mask) a round is 50 one-query ``search`` calls, one hnswlib thread:

* ``ours``: ``search(query, 10, allowed=mask)``: exact over the allowed rows or the graph,
  oversampled, as the cost model picks (``hybrid_engine.dense.filtered``);
* ``hnswlib_filter``: ``knn_query(query, k=10, filter=list.__getitem__)``, candidates rescored
  exactly, exact over the allowed rows when hnswlib finds fewer than 10
  (``bench_common.hnswlib_filter_search``).

Group ``dense-filter-10k-{percent}-1q-k10``; the ratio ``hnswlib_filter_over_ours`` above 1:
ours is faster. Each side's recall@10 against the exact search over the allowed vectors is
in ``extra_info`` (computed outside the timing).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from bench_common import clustered_vectors, hnswlib_filter_search, record_ratio

N = 10_000
DIM = 384
K = 10
QUERIES_PER_ROUND = 50
SELECTIVITIES = [0.001, 0.01, 0.1, 0.5]
SIDES = ["ours", "hnswlib_filter"]
_STATE: dict[str, Any] = {}


def _index() -> Any:
    from hybrid_engine import DenseIndex

    if "index" not in _STATE:
        vectors = clustered_vectors(N, DIM, seed=0)
        _STATE["index"] = DenseIndex.from_vectors(vectors, exact_threshold=0)
    return _STATE["index"]


@pytest.fixture(scope="module")
def queries() -> np.ndarray:
    return clustered_vectors(QUERIES_PER_ROUND, DIM, seed=1)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("selectivity", SELECTIVITIES)
def test_filtered_single_query(benchmark, side: str, selectivity: float, queries) -> None:
    index = _index()
    allowed = np.random.default_rng(int(selectivity * 1000)).random(N) < selectivity
    if side == "ours":

        def search(query: np.ndarray, k: int) -> Any:
            return index.search(query, k, num_threads=1, allowed=allowed)

    else:
        search = hnswlib_filter_search(index, allowed)
    found = np.concatenate([search(query, K).ids for query in queries])
    truth = index.search(queries, K, exact=True, allowed=allowed).ids
    assert allowed[found[found >= 0]].all()
    assert ((found >= 0).sum(axis=1) == min(K, int(allowed.sum()))).all()
    benchmark.extra_info["recall_at_10"] = float(
        np.mean(
            [len(set(f) & set(t[t >= 0])) / max(1, (t >= 0).sum()) for f, t in zip(found, truth)]
        )
    )
    benchmark.extra_info["n_allowed"] = int(allowed.sum())
    group = f"dense-filter-{N // 1000}k-{selectivity:.1%}-1q-k{K}"
    benchmark.group = group

    def run() -> None:
        for query in queries:
            search(query, K)

    benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1)
    benchmark.extra_info["queries_per_call"] = QUERIES_PER_ROUND
    record_ratio(benchmark, group, side, reference="ours")
