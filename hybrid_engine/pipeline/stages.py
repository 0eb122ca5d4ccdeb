"""The stages of one ``HybridIndex.search``, each timed: every leg's top hits over the
snapshot's segments (within the filter), fusion, cross-encoder reranking, MMR.

Blank queries are searched by no leg (each gives them an all-padding row), so fusion,
reranking and MMR never see them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hybrid_engine.checks import check_int, check_k, nonblank_rows
from hybrid_engine.live.snapshot import Hit, Masks, Snapshot
from hybrid_engine.metadata import Filter
from hybrid_engine.pipeline.fusion import fuse
from hybrid_engine.pipeline.legs import leg_weights
from hybrid_engine.pipeline.mmr import mmr
from hybrid_engine.pipeline.rerank import RerankerVerdict, rerank
from hybrid_engine.protocols import PairScorer, SparseEncoder, TextEncoder
from hybrid_engine.results import PAD_ID, SearchResult


@dataclass(frozen=True)
class HybridResult(SearchResult):
    """A ``SearchResult`` plus the wall-clock milliseconds of each stage of the call.

    Attributes
    ----------
    timings : dict of str to float
        ``"bm25"``, ``"dense"`` and ``"splade"`` (query encoding included) for the legs used,
        ``"filter"``, ``"fusion"``, ``"rerank"`` and ``"mmr"`` (when used) and ``"total"``.

    ``ids`` are positions in the snapshot the search ran on; ``doc_ids`` and ``hits`` read
    the documents from that snapshot, whatever was committed since.
    """

    timings: dict[str, float] = field(default_factory=dict)
    snapshot: Snapshot | None = field(default=None, repr=False, compare=False)

    @property
    def doc_ids(self) -> list[list[str]]:
        """The external ids of each query's hits, best first (padding left out)."""
        snapshot = self._documents()
        return [[snapshot.doc_id(int(i)) for i in row if i != PAD_ID] for row in self.ids]

    def hits(self) -> list[list[Hit]]:
        """Each query's hits, best first: id, score, title, text and metadata."""
        snapshot = self._documents()
        return [
            [
                snapshot.hit(int(i), float(s))
                for i, s in zip(row, scores, strict=True)
                if i != PAD_ID
            ]
            for row, scores in zip(self.ids, self.scores, strict=True)
        ]

    def _documents(self) -> Snapshot:
        if self.snapshot is None:
            raise ValueError(
                "this result was not returned by HybridIndex.search: it has no documents"
            )
        return self.snapshot


@dataclass(frozen=True)
class SearchPlan:
    """What one search runs, every parameter already checked (``checked``; ``HybridIndex.search``
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
    where : Filter or None
        The documents searched, compiled; None: all of them.
    """

    k: int
    fusion: str
    weights: list[float] | None
    depth: int
    rerank: int | None
    blend: float | None
    mmr: float | None
    mmr_pool: int
    where: Filter | None

    @classmethod
    def checked(
        cls,
        k: int,
        *,
        fusion: str,
        weights: Mapping[str, float] | None,
        depth: int,
        rerank: int | None,
        blend: float | None,
        mmr: float | None,
        mmr_candidates: int,
        filter: Mapping[str, Any] | Filter | None,
        retrievers: tuple[str, ...],
        verdict: RerankerVerdict | None,
    ) -> SearchPlan:
        """The plan of ``HybridIndex.search``'s parameters (documented there) for an engine
        of ``retrievers`` whose reranker got ``verdict`` from its gate (None: no reranker).
        A reranker the gate refused leaves ``rerank`` None: the fused ranking is served.

        Raises
        ------
        ValueError, TypeError
            As ``HybridIndex.search`` raises them for bad parameters.
        """
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
        where = Filter.compile(filter) if filter is not None else None
        verdict = verdict if rerank is not None else None
        reranking = verdict is not None and verdict.use  # refused: serve the fused ranking
        k = check_k(k)
        return cls(
            k=k,
            fusion=fusion,
            weights=plan_weights,
            depth=check_int("depth", depth, 1),
            rerank=check_int("rerank", rerank, 1) if reranking else None,
            blend=blend if blend is not None or verdict is None else verdict.blend,
            mmr=mmr,
            mmr_pool=max(k, check_int("mmr_candidates", mmr_candidates, 1)),
            where=where,
        )

    @property
    def candidates(self) -> int:
        """Fused hits kept per query: enough for the reranker and MMR."""
        return max(self.mmr_pool if self.mmr is not None else self.k, self.rerank or 0)

    @property
    def width(self) -> int:
        """Hits each leg is asked for."""
        return max(self.candidates, self.depth)


@dataclass(frozen=True)
class Models:
    """The models a search runs: the legs' query encoders and the reranker (None where not
    used)."""

    encoder: TextEncoder | None
    splade_encoder: SparseEncoder | None
    reranker: PairScorer | None


def check_query_vectors(
    query_vectors: object, n_queries: int, dim: int, retrievers: Sequence[str]
) -> np.ndarray:
    """``HybridIndex.search``'s ``query_vectors`` as a C-contiguous float32 ``(n_queries,
    dim)`` array.

    Raises
    ------
    ValueError
        The index has no dense leg, another shape, or a NaN or infinite value.
    TypeError
        Not a numpy array, or not float32 (cast with ``.astype(np.float32)``).
    """
    if "dense" not in retrievers:
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


def run_search(
    plan: SearchPlan,
    snapshot: Snapshot,
    retrievers: Sequence[str],
    queries: list[str],
    models: Models,
    allowed: Masks,
    num_threads: int | None,
    query_vectors: np.ndarray | None = None,
) -> HybridResult:
    """The stages of ``plan`` over ``snapshot``'s ``retrievers`` for checked ``queries``, each
    leg returning only documents ``allowed`` (per segment); ``models.reranker`` is needed when
    ``plan.rerank`` is set. ``query_vectors`` (checked, one row per query) replace the dense
    leg's encoding of the queries."""
    timings: dict[str, float] = {}
    start = time.perf_counter()
    rows = nonblank_rows(queries)
    found, query_vectors = _search_legs(
        snapshot,
        retrievers,
        queries,
        rows,
        plan.width,
        models,
        allowed,
        num_threads,
        timings,
        query_vectors,
    )
    tick = time.perf_counter()
    result = fuse(
        found, plan.candidates, method=plan.fusion, weights=plan.weights, depth=plan.width
    )
    timings["fusion"] = (time.perf_counter() - tick) * 1000
    if plan.rerank is not None and models.reranker is not None:
        tick = time.perf_counter()
        texts = SnapshotTexts(snapshot)
        result = rerank(
            result, queries, texts, models.reranker, depth=plan.rerank, blend=plan.blend
        )
        timings["rerank"] = (time.perf_counter() - tick) * 1000
    if plan.mmr is not None:
        tick = time.perf_counter()
        head = SearchResult(result.ids[rows, : plan.mmr_pool], result.scores[rows, : plan.mmr_pool])
        result = _mmr(head, query_vectors, snapshot, plan).scattered(rows, len(queries))
        timings["mmr"] = (time.perf_counter() - tick) * 1000
    timings["total"] = (time.perf_counter() - start) * 1000
    k = plan.k
    return HybridResult(result.ids[:, :k], result.scores[:, :k], timings, snapshot)


class SnapshotTexts(Sequence[str]):
    """The indexed texts of a snapshot by global position (what the reranker reads)."""

    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def __len__(self) -> int:
        return self._snapshot.size

    def __getitem__(self, position: int) -> str:  # type: ignore[override]
        return self._snapshot.text(int(position))


def _mmr(
    head: SearchResult, query_vectors: np.ndarray, snapshot: Snapshot, plan: SearchPlan
) -> SearchResult:
    """MMR over the candidates' vectors only, gathered from their segments: positions map to
    rows of the gathered matrix in ascending order, so MMR's tie rule is kept."""
    assert plan.mmr is not None
    used = np.unique(head.ids[head.ids != PAD_ID])
    if len(used) == 0:
        return SearchResult.empty(len(head), plan.k)
    local = np.where(head.ids == PAD_ID, PAD_ID, np.searchsorted(used, head.ids))
    candidates = SearchResult(local, head.scores)
    picks = mmr(candidates, query_vectors, snapshot.vectors(used), plan.k, lambda_=plan.mmr)
    ids = np.where(picks.ids == PAD_ID, PAD_ID, used[np.maximum(picks.ids, 0)])
    return SearchResult(ids, picks.scores)


def _search_legs(
    snapshot: Snapshot,
    retrievers: Sequence[str],
    queries: list[str],
    rows: np.ndarray,
    width: int,
    models: Models,
    allowed: Masks,
    num_threads: int | None,
    timings: dict[str, float],
    given_vectors: np.ndarray | None,
) -> tuple[list[SearchResult], np.ndarray]:
    """Each leg's top ``width`` of the queries, and the dense query vectors of the non-blank
    ones (``rows``; none without the dense leg), encoded once here so MMR reuses them (or
    taken from ``given_vectors``, one row per query, when given)."""
    found: list[SearchResult] = []
    query_vectors = np.empty((0, 0), np.float32)
    asked = [queries[row] for row in rows]
    if "bm25" in retrievers:
        tick = time.perf_counter()
        found.append(snapshot.search_bm25(queries, width, num_threads, allowed))
        timings["bm25"] = (time.perf_counter() - tick) * 1000
    if "dense" in retrievers:
        tick = time.perf_counter()
        assert models.encoder is not None  # the engine always has one with a dense leg
        query_vectors = np.empty((0, models.encoder.dim), np.float32)
        if given_vectors is not None:
            query_vectors = given_vectors[rows]
        elif len(rows):
            query_vectors = models.encoder.encode(asked)
        hits = snapshot.search_dense(query_vectors, width, num_threads, allowed)
        found.append(hits.scattered(rows, len(queries)))
        timings["dense"] = (time.perf_counter() - tick) * 1000
    if "splade" in retrievers:
        tick = time.perf_counter()
        assert models.splade_encoder is not None
        hits = SearchResult.empty(len(rows), width)
        if len(rows):
            vectors = models.splade_encoder.encode(asked)
            hits = snapshot.search_splade(vectors, width, num_threads, allowed)
        found.append(hits.scattered(rows, len(queries)))
        timings["splade"] = (time.perf_counter() - tick) * 1000
    return found, query_vectors
