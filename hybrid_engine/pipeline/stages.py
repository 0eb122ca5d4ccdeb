"""The stages of one ``HybridIndex.search``, each timed: every leg's top hits, fusion,
cross-encoder reranking, MMR.

Blank queries are searched by no leg (each gives them an all-padding row), so fusion,
reranking and MMR never see them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from hybrid_engine.checks import nonblank_rows
from hybrid_engine.pipeline.fusion import fuse
from hybrid_engine.pipeline.legs import Legs
from hybrid_engine.pipeline.mmr import mmr
from hybrid_engine.pipeline.rerank import rerank
from hybrid_engine.protocols import PairScorer
from hybrid_engine.results import SearchResult


@dataclass(frozen=True)
class HybridResult(SearchResult):
    """A ``SearchResult`` plus the wall-clock milliseconds of each stage of the call.

    Attributes
    ----------
    timings : dict of str to float
        ``"bm25"``, ``"dense"`` and ``"splade"`` (query encoding included) for the legs used,
        ``"fusion"``, ``"rerank"`` and ``"mmr"`` (when used) and ``"total"``.
    """

    timings: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class SearchPlan:
    """What one search runs, every parameter already checked (``HybridIndex.search``
    documents them).

    Attributes
    ----------
    k : int
        Hits per query returned.
    fusion : str
        ``fuse``'s method.
    weights : list of float or None
        ``fuse``'s weights, in the order of the legs.
    depth : int
        Hits each leg hands to fusion (at least ``candidates`` are used).
    rerank : int or None
        Fused hits the cross-encoder re-orders; None: no reranking.
    blend : float or None
        ``rerank``'s blend weight.
    mmr : float or None
        MMR's lambda; None: no MMR.
    mmr_pool : int
        Candidates MMR picks ``k`` from, >= ``k``.
    """

    k: int
    fusion: str
    weights: list[float] | None
    depth: int
    rerank: int | None
    blend: float | None
    mmr: float | None
    mmr_pool: int

    @property
    def candidates(self) -> int:
        """Fused hits kept per query: enough for the reranker and MMR."""
        return max(self.mmr_pool if self.mmr is not None else self.k, self.rerank or 0)

    @property
    def width(self) -> int:
        """Hits each leg is asked for."""
        return max(self.candidates, self.depth)


def run_search(
    plan: SearchPlan,
    legs: Legs,
    queries: list[str],
    doc_texts: Sequence[str],
    reranker: PairScorer | None,
    num_threads: int | None,
) -> HybridResult:
    """The stages of ``plan`` over ``legs`` for checked ``queries``; ``reranker`` is needed
    when ``plan.rerank`` is set and ``legs.dense`` when ``plan.mmr`` is."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    rows = nonblank_rows(queries)
    found, query_vectors = _search_legs(legs, queries, rows, plan.width, num_threads, timings)
    tick = time.perf_counter()
    result = fuse(
        found, plan.candidates, method=plan.fusion, weights=plan.weights, depth=plan.width
    )
    timings["fusion"] = (time.perf_counter() - tick) * 1000
    if plan.rerank is not None and reranker is not None:
        tick = time.perf_counter()
        result = rerank(result, queries, doc_texts, reranker, depth=plan.rerank, blend=plan.blend)
        timings["rerank"] = (time.perf_counter() - tick) * 1000
    if plan.mmr is not None and legs.dense is not None:
        tick = time.perf_counter()
        pool = plan.mmr_pool
        head = SearchResult(result.ids[rows, :pool], result.scores[rows, :pool])
        picks = mmr(head, query_vectors, legs.dense.vectors, plan.k, lambda_=plan.mmr)
        result = picks.scattered(rows, len(queries))
        timings["mmr"] = (time.perf_counter() - tick) * 1000
    timings["total"] = (time.perf_counter() - start) * 1000
    return HybridResult(result.ids[:, : plan.k], result.scores[:, : plan.k], timings)


def _search_legs(
    legs: Legs,
    queries: list[str],
    rows: np.ndarray,
    width: int,
    num_threads: int | None,
    timings: dict[str, float],
) -> tuple[list[SearchResult], np.ndarray]:
    """Each leg's top ``width`` of the queries, and the dense query vectors of the non-blank
    ones (``rows``; none without the dense leg), encoded once here so MMR reuses them."""
    found: list[SearchResult] = []
    query_vectors = np.empty((0, 0), np.float32)
    if legs.bm25 is not None:
        tick = time.perf_counter()
        found.append(legs.bm25.search(queries, width, num_threads=num_threads))
        timings["bm25"] = (time.perf_counter() - tick) * 1000
    if legs.dense is not None:
        tick = time.perf_counter()
        encoder = legs.dense.encoder
        assert encoder is not None  # build, from_legs and load give the dense leg one
        query_vectors = np.empty((0, legs.dense.dim), np.float32)
        if len(rows):
            query_vectors = encoder.encode([queries[row] for row in rows])
        hits = legs.dense.search(query_vectors, width, num_threads=num_threads)
        found.append(hits.scattered(rows, len(queries)))
        timings["dense"] = (time.perf_counter() - tick) * 1000
    if legs.splade is not None:
        tick = time.perf_counter()
        found.append(legs.splade.search(queries, width, num_threads=num_threads))
        timings["splade"] = (time.perf_counter() - tick) * 1000
    return found, query_vectors
