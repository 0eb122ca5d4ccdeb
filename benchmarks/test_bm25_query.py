"""BM25 query speed: ``BM25Index.search`` against bm25s (and rank_bm25) on the same data.

Both sides get query *text* and do their own analysis inside the timing (ours: C++ analyzer +
numba scoring; bm25s: ``bm25s.tokenize`` + ``retrieve``), with the same tokens (bm25s-parity
analyzer), the same parameters (Lucene BM25, k1=0.9, b=0.4) and one thread each. Indexes are
built once per session, outside the timing; a warm-up round (numba compilation, caches) precedes
every timed series.

Ratios (``<peer>_over_ours`` in ``extra_info`` and in the terminal summary) are median time of the
peer / median time of ours: above 1, ours is faster.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from bench_common import BM25_PARAMS, bm25s_search, ours_search, record_ratio


def _run(benchmark: Any, fn: Any, rounds: int, group: str, side: str, n_queries: int) -> Any:
    result = benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=1)
    benchmark.extra_info["queries"] = n_queries
    record_ratio(benchmark, group, side)
    return result


# -- SciFact: 5,183 docs, all 1,109 queries ----------------------------------------------------


@pytest.mark.parametrize("k", [10, 1000])
@pytest.mark.parametrize("side", ["ours", "bm25s"])
def test_scifact(benchmark, side, k, scifact_engines, scifact_queries, bm25s_module, stemmer):
    group = f"scifact-1109q-k{k}"
    benchmark.group = group
    ours, theirs = scifact_engines
    fn = (
        ours_search(ours, scifact_queries, k)
        if side == "ours"
        else bm25s_search(bm25s_module, theirs, stemmer, scifact_queries, k)
    )
    _run(benchmark, fn, 7, group, side, len(scifact_queries))


# rank_bm25 scores every document in Python-level numpy per query term: ~100x slower, so it
# gets a subset of the queries, and ours runs on the same subset in its own group.
RANK_BM25_QUERIES = 100


@pytest.mark.parametrize("side", ["ours", "rank_bm25"])
def test_scifact_rank_bm25(
    benchmark, side, scifact_texts, scifact_queries, scifact_engines, bm25s_module, stemmer
):
    k = 10
    group = f"scifact-{RANK_BM25_QUERIES}q-k{k}-rank_bm25"
    benchmark.group = group
    queries = scifact_queries[:RANK_BM25_QUERIES]
    if side == "ours":
        fn = ours_search(scifact_engines[0], queries, k)
    else:
        rank_bm25 = pytest.importorskip("rank_bm25", reason="rank_bm25 is an optional peer")
        okapi = _rank_bm25_index(rank_bm25, bm25s_module, scifact_texts, stemmer)

        def fn() -> np.ndarray:
            # Same analysis as bm25s (and as ours), as token strings; then a full score
            # vector per query and a top-k selection.
            tokens = bm25s_module.tokenize(
                queries, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
            )
            out = np.empty((len(queries), k), dtype=np.int64)
            for row, query in enumerate(tokens):
                scores = okapi.get_scores(query)
                top = np.argpartition(-scores, k)[:k]
                out[row] = top[np.argsort(-scores[top], kind="stable")]
            return out

    _run(benchmark, fn, 3, group, side, len(queries))


_OKAPI: dict[int, Any] = {}


def _rank_bm25_index(rank_bm25: Any, bm25s: Any, texts: list[str], stemmer: Any) -> Any:
    key = id(texts)
    if key not in _OKAPI:
        tokens = bm25s.tokenize(
            texts, stopwords="en", stemmer=stemmer, return_ids=False, show_progress=False
        )
        # BM25Okapi is Robertson BM25 with an idf floor: the same k1 and b, not the same idf.
        _OKAPI[key] = rank_bm25.BM25Okapi(tokens, k1=BM25_PARAMS["k1"], b=BM25_PARAMS["b"])
    return _OKAPI[key]


# -- scale corpus: 253,928 real docs, 6,980 MS MARCO queries ------------------------------------


@pytest.mark.scale
@pytest.mark.parametrize("k", [10, 1000])
@pytest.mark.parametrize("side", ["ours", "bm25s"])
def test_scale_msmarco(benchmark, side, k, scale_engines, msmarco_queries, bm25s_module, stemmer):
    group = f"scale-254k-msmarco-6980q-k{k}"
    benchmark.group = group
    ours, theirs = scale_engines
    fn = (
        ours_search(ours, msmarco_queries, k)
        if side == "ours"
        else bm25s_search(bm25s_module, theirs, stemmer, msmarco_queries, k)
    )
    _run(benchmark, fn, 3, group, side, len(msmarco_queries))
