"""Negatives mined with the engine's own hybrid retrieval, and the listwise groups built of them.

A pair's hard-negative pool is the hybrid top ``RERANK_DEPTH`` of its query minus its judged
positives (``data.candidate_pools``): the candidates a reranker has to order at serving time.
Every epoch draws each pair's negatives afresh from that pool and/or the corpus
(``data.draw_negatives``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hybrid_engine.corpus import document_text
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.pipeline.rerank import RERANK_DEPTH
from hybrid_engine.result import SearchResult
from hybrid_engine.training.data import Pair, candidate_pools, draw_negatives

RETRIEVAL_BATCH = 512
"""Queries per ``HybridIndex.search`` call while mining negatives."""


def fused_top(engine: HybridIndex, queries: Sequence[str], depth: int) -> SearchResult:
    """``engine.search`` in batches of ``RETRIEVAL_BATCH`` queries, as one result."""
    parts = [
        engine.search(list(queries[i : i + RETRIEVAL_BATCH]), depth)
        for i in range(0, len(queries), RETRIEVAL_BATCH)
    ]
    if not parts:
        return SearchResult(np.empty((0, depth), np.int64), np.empty((0, depth), np.float32))
    return SearchResult(
        np.concatenate([p.ids for p in parts]), np.concatenate([p.scores for p in parts])
    )


def mine_pools(engine: HybridIndex, pairs: Sequence[Pair]) -> list[np.ndarray]:
    """Each pair's hard-negative pool: the hybrid top ``RERANK_DEPTH`` of its query without
    its positives (int64 corpus positions, best first)."""
    ranked = fused_top(engine, [p.query for p in pairs], RERANK_DEPTH).ids
    return candidate_pools(ranked, pairs)


def negative_passage(documents: Sequence[dict[str, str]], position: int, kind: str) -> str:
    """A negative as its group's positive is shown: body only for title -> body pairs."""
    if kind == "title":
        return documents[position]["text"]
    return document_text(documents[position], position)[0]


def listwise_groups(
    pairs: Sequence[Pair],
    pools: Sequence[np.ndarray],
    documents: Sequence[dict[str, str]],
    chunk: Sequence[int],
    *,
    negatives: int,
    mode: str,
    rng: np.random.Generator,
) -> tuple[list[str], list[str]]:
    """The aligned (queries, passages) of the groups of ``chunk`` (indices into ``pairs``).

    Each group is ``1 + negatives`` pairs of one query: its positive passage first, then
    ``negatives`` drawn from its pool by ``mode`` (``data.draw_negatives``), in ``chunk``
    order, so the logits reshape to ``(len(chunk), 1 + negatives)`` with the positive in
    column 0.
    """
    queries: list[str] = []
    texts: list[str] = []
    for i in chunk:
        pair = pairs[i]
        drawn = draw_negatives(pools[i], pair.excluded, negatives, mode, len(documents), rng)
        texts += [pair.passage] + [negative_passage(documents, p, pair.kind) for p in drawn]
        queries += [pair.query] * (1 + negatives)
    return queries, texts
