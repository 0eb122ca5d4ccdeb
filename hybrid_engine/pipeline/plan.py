"""What one search runs: its queries and parameters, checked once before any stage, in one place
for every kind of index (``HybridIndex``, ``ShardedIndex``, and ``ParentDocumentIndex`` through
its inner engine) and every door that reaches them (API, CLI, server, adapters)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from hybrid_engine.checks import check_int, check_k, check_queries
from hybrid_engine.metadata import Filter
from hybrid_engine.pipeline.budget import check_budget
from hybrid_engine.pipeline.facets import check_facets
from hybrid_engine.pipeline.fusion import check_method, check_weights
from hybrid_engine.pipeline.legs import leg_weights
from hybrid_engine.pipeline.rerank import RerankerVerdict, check_blend
from hybrid_engine.pipeline.rescore import Decay, Expression, check_decay, check_expression
from hybrid_engine.pipeline.stack import Stack, search_options
from hybrid_engine.result import hits_width


@dataclass(frozen=True)
class SearchPlan:
    """What one search runs, every parameter already checked (``checked``; ``HybridIndex.search``
    documents them).

    Attributes
    ----------
    texts : list of str
        The query texts (blank ones kept: a query without hits).
    k : int
        Hits per query ranked: the page and the ``offset`` hits before it (``bounded``: at
        most the live documents).
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
    where : Filter or None
        The documents searched, compiled; None: all of them.
    strict : bool
        A failing stage raises instead of being left out.
    budget_ms : float or None
        The time budget of the optional stages (``budget``); None: no budget.
    offset : int
        Ranked hits skipped before the page: a search returns hits ``offset`` to ``k`` of
        its ranking.
    min_score : float or None
        Fused hits whose relevance (``relevance``) is below it are dropped before reranking
        and MMR; None: none are.
    facets : tuple of str or None
        Metadata fields whose values are counted over the fused candidates (``facets``);
        None: no counts.
    decay, expression : Decay, Expression or None
        The rescoring of the fused candidates (``rescore``); None: none.
    query_vectors : numpy.ndarray or None
        The dense leg's queries, float32 ``(len(texts), dim)``; None: the texts are encoded.
    """

    texts: list[str]
    k: int
    fusion: str
    weights: list[float] | None
    depth: int
    rerank: int | None
    blend: float | None
    mmr: float | None
    mmr_pool: int
    where: Filter | None
    strict: bool = False
    budget_ms: float | None = None
    offset: int = 0
    min_score: float | None = None
    facets: tuple[str, ...] | None = None
    decay: Decay | None = None
    expression: Expression | None = None
    query_vectors: np.ndarray | None = field(default=None, repr=False, compare=False)

    @classmethod
    def checked(
        cls,
        queries: str | Sequence[str] | np.ndarray,
        k: int,
        *,
        retrievers: tuple[str, ...],
        verdict: RerankerVerdict | None,
        dim: int | None,
        stack: Stack | None,
        fusion: str,
        weights: Mapping[str, float] | None,
        depth: int,
        rerank: int | None,
        blend: float | None,
        mmr: float | None,
        mmr_candidates: int,
        filter: Mapping[str, Any] | Filter | None,
        query_vectors: np.ndarray | None,
        strict: bool,
        budget_ms: float | None,
        offset: int,
        min_score: float | None,
        facets: Sequence[str] | None,
        decay: Mapping[str, Any] | None,
        expression: str | None,
    ) -> SearchPlan:
        """The plan of a search's queries and options (``Searchable.search`` documents them
        and holds their defaults: ``engine.search.SEARCH_DEFAULTS``; ``SEARCH_OPTIONS`` names
        them) for an index of ``retrievers`` whose reranker got
        ``verdict`` from its gate (None: no reranker) and whose dense leg makes vectors of
        ``dim`` dimensions (None: no dense leg loaded). A reranker the gate refused leaves
        ``rerank`` None: the fused ranking is served.

        Raises
        ------
        ValueError, TypeError
            As ``HybridIndex.search`` raises them for bad queries or parameters.
        """
        texts = check_queries(queries)
        fusion, weights, depth, rerank = search_options(
            stack, fusion, weights, depth, rerank, retrievers
        )
        plan_weights = leg_weights(weights, retrievers)
        if mmr is not None and "dense" not in retrievers:
            raise ValueError(
                "mmr needs the dense retriever; build with retrievers=('bm25', 'dense')"
            )
        if rerank is not None and verdict is None:
            raise ValueError(
                "rerank needs a cross-encoder: pass reranker=CrossEncoder.load(...) to build or "
                "load, or use engine.with_reranker(...)"
            )
        check_method(fusion)  # what the stages would raise, raised before any runs
        if plan_weights is not None:
            check_weights(plan_weights, len(plan_weights))
        check_blend(blend)
        if mmr is not None and not (isinstance(mmr, (int, float)) and 0.0 <= mmr <= 1.0):
            raise ValueError(f"mmr must be None or a lambda in [0, 1], got {mmr!r}")
        where = Filter.compile(filter) if filter is not None else None
        verdict = verdict if rerank is not None else None
        reranking = verdict is not None and verdict.use  # refused: serve the fused ranking
        offset = check_int("offset", offset, 0)
        k = check_k(k) + offset  # the page is the end of one ranking of k + offset hits
        return cls(
            texts=texts,
            k=k,
            fusion=fusion,
            weights=plan_weights,
            depth=check_int("depth", depth, 1),
            rerank=check_int("rerank", rerank, 1) if reranking else None,
            blend=blend if blend is not None or verdict is None else verdict.blend,
            mmr=mmr,
            mmr_pool=max(k, check_int("mmr_candidates", mmr_candidates, 1)),
            where=where,
            strict=_check_strict(strict),
            budget_ms=check_budget(budget_ms),
            offset=offset,
            min_score=_check_min_score(min_score),
            facets=check_facets(facets),
            decay=check_decay(decay),
            expression=check_expression(expression),
            query_vectors=(
                None
                if query_vectors is None
                else _check_query_vectors(query_vectors, len(texts), dim)
            ),
        )

    def bounded(self, n_docs: int) -> SearchPlan:
        """This plan over a collection of ``n_docs`` live documents: ``k`` becomes
        ``hits_width(k, n_docs)`` (the width of the result), and no stage asks for more hits
        than there are documents (``depth``, ``rerank`` and the MMR pool at most
        ``max(n_docs, 1)``), so what a search holds is bounded by the collection, not by
        ``k``."""
        most = max(n_docs, 1)
        return replace(
            self,
            k=hits_width(self.k, n_docs),
            depth=min(self.depth, most),
            rerank=None if self.rerank is None else min(self.rerank, most),
            mmr_pool=min(self.mmr_pool, most),
        )

    @property
    def every_candidate(self) -> bool:
        """Whether fusion keeps every candidate, not just the head: facets count over all of
        them, and a rescoring may lift any of them into the head."""
        return self.facets is not None or self.decay is not None or self.expression is not None

    @property
    def candidates(self) -> int:
        """Fused hits kept per query: enough for the reranker and MMR (at least 1)."""
        return max(self.mmr_pool if self.mmr is not None else self.k, self.rerank or 0, 1)

    @property
    def width(self) -> int:
        """Hits each leg is asked for."""
        return max(self.candidates, self.depth)


SEARCH_OPTIONS = (
    "stack",
    "fusion",
    "weights",
    "depth",
    "rerank",
    "blend",
    "mmr",
    "mmr_candidates",
    "filter",
    "num_threads",
    "query_vectors",
    "strict",
    "budget_ms",
    "offset",
    "min_score",
    "facets",
    "decay",
    "expression",
)
"""The keyword options of a search, the same on every kind of index (``HybridIndex.search``
documents them): all but ``num_threads`` (how, not what) are checked by ``SearchPlan.checked``."""


def _check_query_vectors(query_vectors: object, n_queries: int, dim: int | None) -> np.ndarray:
    """``query_vectors`` as a C-contiguous float32 ``(n_queries, dim)`` array.

    Raises
    ------
    ValueError
        The index has no dense leg (``dim`` None), another shape, or a NaN or infinite value.
    TypeError
        Not a numpy array, or not float32 (cast with ``.astype(np.float32)``).
    """
    if dim is None:
        raise ValueError(
            "query_vectors are the dense leg's queries, but this index has no dense leg; "
            "build it with retrievers=('bm25', 'dense')"
        )
    if not isinstance(query_vectors, np.ndarray):
        raise TypeError(f"query_vectors must be a numpy array, got {type(query_vectors).__name__}")
    if query_vectors.dtype != np.float32:
        raise TypeError(
            f"query_vectors must be float32, got {query_vectors.dtype}: cast with "
            ".astype(np.float32)"
        )
    if query_vectors.shape != (n_queries, dim):
        raise ValueError(
            f"query_vectors must have shape (n_queries, dim) = ({n_queries}, {dim}), one row "
            f"per query, got {query_vectors.shape}"
        )
    if not np.isfinite(query_vectors).all():
        raise ValueError("query_vectors hold a NaN or infinite value")
    return np.ascontiguousarray(query_vectors)


def _check_strict(strict: object) -> bool:
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be True or False, got {strict!r}")
    return strict


def _check_min_score(min_score: object) -> float | None:
    """``min_score`` when None or a number in [0, 1]; ValueError otherwise."""
    if min_score is None:
        return None
    if isinstance(min_score, bool) or not isinstance(min_score, (int, float)):
        raise TypeError(f"min_score must be None or a number in [0, 1], got {min_score!r}")
    if not 0.0 <= min_score <= 1.0:
        raise ValueError(
            f"min_score must be in [0, 1] (the relevance scale of every fusion method, "
            f"docs/fusion.md), got {min_score!r}"
        )
    return float(min_score)
