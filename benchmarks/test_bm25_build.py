"""Index build throughput (documents per second): ``BM25Index.build`` against bm25s.

The texts are in memory; analysis is inside the timing on both sides (ours: C++ analyzer threads
+ postings; bm25s: ``bm25s.tokenize`` with PyStemmer + ``BM25.index``). Ours runs with one
analysis thread and with the default (all cores, 2 here); bm25s's build is single-threaded.
Numba compilation is warmed up on a small slice of the corpus before any timing.

Ratios: ``bm25s_over_ours*`` = median build time of bm25s / ours = ours docs/s / bm25s docs/s;
``ours_positions`` (``positions=True``, for phrase queries, 2 threads) against
``ours_2_threads``: what recording positions costs the build.
"""

from __future__ import annotations

import pytest
from bench_common import build_bm25s, build_ours, record_ratio

WARMUP_DOCS = 2000
GROUP = "build-scale-254k"


@pytest.fixture(scope="module")
def warmed(scale_texts, parity_analyzer, bm25s_module, stemmer):
    build_ours(scale_texts[:WARMUP_DOCS], parity_analyzer)
    build_bm25s(bm25s_module, scale_texts[:WARMUP_DOCS], stemmer)
    return scale_texts


def _finish(benchmark, side, n_docs):
    record_ratio(benchmark, GROUP, side, reference="ours_2_threads")
    if "median_s" in benchmark.extra_info:
        benchmark.extra_info["docs_per_s"] = n_docs / benchmark.extra_info["median_s"]
    benchmark.extra_info["docs"] = n_docs


@pytest.mark.scale
@pytest.mark.parametrize("num_threads", [1, 2])
def test_build_ours(benchmark, num_threads, warmed, parity_analyzer):
    benchmark.group = GROUP
    index = benchmark.pedantic(
        build_ours, args=(warmed, parity_analyzer, num_threads), rounds=3, iterations=1
    )
    assert index.num_documents == len(warmed)
    _finish(benchmark, f"ours_{num_threads}_thread{'s' if num_threads > 1 else ''}", len(warmed))


@pytest.mark.scale
def test_build_ours_with_positions(benchmark, warmed, parity_analyzer):
    benchmark.group = GROUP
    index = benchmark.pedantic(
        build_ours, args=(warmed, parity_analyzer, 2, True), rounds=3, iterations=1
    )
    assert index.has_positions
    _finish(benchmark, "ours_positions", len(warmed))


@pytest.mark.scale
def test_build_bm25s(benchmark, warmed, bm25s_module, stemmer):
    benchmark.group = GROUP
    benchmark.pedantic(build_bm25s, args=(bm25s_module, warmed, stemmer), rounds=2, iterations=1)
    _finish(benchmark, "bm25s", len(warmed))
