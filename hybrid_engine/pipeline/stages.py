"""The stages of one ``HybridIndex.search``, each timed: every leg's top hits over the
snapshot's segments (within the filter), fusion, cross-encoder reranking, MMR.

Blank queries are searched by no leg (each gives them an all-padding row), so fusion,
reranking and MMR never see them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hybrid_engine.checks import nonblank_rows
from hybrid_engine.dense.encoding import QUERY, sided
from hybrid_engine.lexical.phrases import stitched
from hybrid_engine.live.query_groups import QueryGroups, search_bm25_groups
from hybrid_engine.live.snapshot import Masks, Snapshot
from hybrid_engine.pipeline.degradation import Health
from hybrid_engine.pipeline.facets import Facets, count_facets
from hybrid_engine.pipeline.fusion import fuse
from hybrid_engine.pipeline.guard import StageRunner
from hybrid_engine.pipeline.mmr import mmr
from hybrid_engine.pipeline.plan import SearchPlan
from hybrid_engine.pipeline.relevance import SCALES, above, relevance, relevance_of
from hybrid_engine.pipeline.rerank import rerank
from hybrid_engine.pipeline.rescore import rescore
from hybrid_engine.pipeline.result import HybridResult
from hybrid_engine.protocols import PairScorer, SparseEncoder, TextEncoder
from hybrid_engine.result import PAD_ID, SearchResult, hits_width


@dataclass(frozen=True)
class Models:
    """The models a search runs: the legs' query encoders and the reranker (None where not
    used)."""

    encoder: TextEncoder | None
    splade_encoder: SparseEncoder | None
    reranker: PairScorer | None


def run_search(
    plan: SearchPlan,
    snapshot: Snapshot,
    retrievers: Sequence[str],
    queries: list[str],
    models: Models,
    groups: QueryGroups,
    num_threads: int | None,
    query_vectors: np.ndarray | None = None,
    *,
    health: Health,
    unloaded: Mapping[str, str] | None = None,
) -> HybridResult:
    """The stages of ``plan`` over ``snapshot``'s ``retrievers`` for checked ``queries``, each
    leg returning only the documents of each query's group's masks (``query_groups``: the
    filter's, narrowed by the query's phrases); ``models.reranker`` is needed when
    ``plan.rerank`` is set. ``query_vectors`` (checked, one row per query) replace the dense
    leg's encoding of the queries. ``unloaded`` names the legs of ``retrievers`` whose model
    the engine could not load, with the reason: they are left out of every search.

    Stages run under the failure and budget rules of ``guard.StageRunner`` (failures and
    skips counted in ``health``, whose cost estimates the budget plans with).

    Raises
    ------
    StageError
        Under ``plan.strict``, a stage that failed (its error chained); or every leg is
        missing.
    """
    start = time.perf_counter()
    runner = StageRunner(health, strict=plan.strict, budget_ms=plan.budget_ms)
    rows = nonblank_rows(queries)
    unloaded = unloaded or {}
    legs = [name for name in retrievers if name not in unloaded]
    reranking = plan.rerank is not None and models.reranker is not None
    n, asked = len(queries), len(rows)
    floor = (
        "bm25"
        if "bm25" in legs
        else min(legs, key=lambda leg: health.costs.estimate(leg, asked) or 0.0, default="")
    )
    fixed = {floor: asked, "fusion": n} | ({"mmr": asked} if plan.mmr is not None else {})
    optional = {leg: asked for leg in legs if leg != floor}
    runner.plan(fixed, optional | ({"rerank": asked * (plan.rerank or 0)} if reranking else {}))
    for name, reason in unloaded.items():
        runner.lose(name, f"not loaded: {reason}")
    found, dense_vectors = _search_legs(
        runner,
        floor,
        snapshot,
        legs,
        queries,
        rows,
        plan.width,
        models,
        groups,
        num_threads,
        query_vectors,
    )
    if not found:
        raise runner.nothing_to_fuse() from runner.first_error
    if query_vectors is not None:
        dense_vectors = query_vectors[rows]
    result, weights = _fuse(runner, plan, found, retrievers, n)
    fused, values = result, relevance(result.scores, plan.fusion, weights, len(found))
    if plan.min_score is not None:
        fused = result = above(result, values, plan.min_score)
    facets = None
    if plan.facets is not None:
        facets = _counted(runner, snapshot, fused, plan.facets, n)
    if plan.decay is not None or plan.expression is not None:
        rescored = runner.run(
            "rescore",
            lambda: rescore(snapshot, fused, values, plan.decay, plan.expression),
            n,
            optional=False,
            degradable=False,
        )
        assert rescored is not None
        result = rescored
    if plan.every_candidate:  # then the head goes on
        result = SearchResult(result.ids[:, : plan.candidates], result.scores[:, : plan.candidates])
    if reranking:
        assert plan.rerank is not None and models.reranker is not None
        texts, reranker, depth = SnapshotTexts(snapshot), models.reranker, plan.rerank
        fused = result
        reranked = runner.run(
            "rerank",
            lambda: rerank(fused, queries, texts, reranker, depth=depth, blend=plan.blend),
            asked * depth,
            optional=True,
            degradable=True,
        )
        result = reranked if reranked is not None else result
    if plan.mmr is not None:
        result = _diversify(runner, plan, result, rows, n, dense_vectors, snapshot)
    runner.timings["total"] = (time.perf_counter() - start) * 1000
    page = slice(plan.offset, plan.k)
    if result is not fused:  # reranked or diversified: each hit's relevance looked up
        values = relevance_of(result.ids, fused.ids, values)
    return HybridResult(
        result.ids[:, page],
        result.scores[:, page],
        runner.timings,
        snapshot,
        degraded=runner.degraded,
        skipped=runner.skipped,
        reasons=runner.reasons,
        relevance=np.where(result.ids[:, page] != PAD_ID, values[:, page], -np.inf),
        relevance_scale=SCALES[plan.fusion],
        facets=facets,
        queries=queries,
        legs=found,
    )


def _fuse(
    runner: StageRunner,
    plan: SearchPlan,
    found: dict[str, SearchResult],
    retrievers: Sequence[str],
    n_queries: int,
) -> tuple[SearchResult, list[float] | None]:
    """The fused ranking of the legs that answered, and the weights it used (None: equal);
    equal weights when those left are all 0 (a leg weighted 0 contributes nothing, so the
    search would be empty)."""
    weights = None
    if plan.weights is not None:
        by_leg = dict(zip(retrievers, plan.weights, strict=True))
        weights = [by_leg[name] for name in found]
        weights = weights if any(weights) else None
    results = list(found.values())
    # Facets count over every candidate, and rescoring may lift any of them into the head.
    kept = sum(r.ids.shape[1] for r in results) if plan.every_candidate else plan.candidates
    fused = runner.run(
        "fusion",
        lambda: fuse(results, max(kept, 1), method=plan.fusion, weights=weights, depth=plan.width),
        n_queries,
        optional=False,
        degradable=False,
    )
    assert fused is not None
    return fused, weights


def _counted(
    runner: StageRunner,
    snapshot: Snapshot,
    fused: SearchResult,
    fields: tuple[str, ...],
    n_queries: int,
) -> list[Facets]:
    """The facet counts of each query's fused candidates, timed as the ``"facets"`` stage."""
    counts = runner.run(
        "facets",
        lambda: count_facets(snapshot, fused.ids, fields),
        n_queries,
        optional=False,
        degradable=False,
    )
    assert counts is not None
    return counts


def _diversify(
    runner: StageRunner,
    plan: SearchPlan,
    result: SearchResult,
    rows: np.ndarray,
    n_queries: int,
    dense_vectors: np.ndarray | None,
    snapshot: Snapshot,
) -> SearchResult:
    """MMR over the fused (reranked) head; left out, like the dense leg, when there are no
    dense query vectors."""
    if dense_vectors is None:
        reason = "needs the dense leg's query vectors"
        if "dense" in runner.skipped:
            runner.skip("mmr", reason)
        else:
            runner.lose("mmr", reason)
        return result
    vectors = dense_vectors
    head = SearchResult(result.ids[rows, : plan.mmr_pool], result.scores[rows, : plan.mmr_pool])
    picked = runner.run(
        "mmr",
        lambda: _mmr(head, vectors, snapshot, plan).scattered(rows, n_queries),
        len(rows),
        optional=False,
        degradable=False,
    )
    assert picked is not None
    return picked


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
    runner: StageRunner,
    floor: str,
    snapshot: Snapshot,
    legs: Sequence[str],
    queries: list[str],
    rows: np.ndarray,
    width: int,
    models: Models,
    groups: QueryGroups,
    num_threads: int | None,
    given_vectors: np.ndarray | None,
) -> tuple[dict[str, SearchResult], np.ndarray | None]:
    """The top ``width`` of the queries of each leg that answered (each group of ``groups``
    within its masks), by leg, and the dense
    query vectors of the non-blank ones (``rows``; None when the dense leg did not run),
    encoded once here so MMR reuses them (or taken from ``given_vectors``, one row per query,
    when given). Every leg but ``floor`` is optional."""
    asked = [queries[row] for row in rows]
    n = len(queries)
    nonblank = np.zeros(n, dtype=bool)
    nonblank[rows] = True
    columns = hits_width(width, snapshot.num_live)

    def nonblank_hits(
        sub: np.ndarray, search: Callable[[np.ndarray], SearchResult]
    ) -> SearchResult:
        """``search(kept)`` of the non-blank rows ``kept`` of ``sub``, a row per row of
        ``sub`` (padding for the blank ones)."""
        kept = sub[nonblank[sub]]
        if not len(kept):
            return SearchResult.empty(len(sub), columns)
        return search(kept).scattered(np.searchsorted(sub, kept), len(sub))

    def bm25() -> tuple[SearchResult, None]:
        return search_bm25_groups(snapshot, queries, groups, width, num_threads), None

    def dense() -> tuple[SearchResult, np.ndarray]:
        assert models.encoder is not None  # the engine always has one with a dense leg
        vectors = np.empty((0, models.encoder.dim), np.float32)
        if given_vectors is not None:
            vectors = given_vectors[rows]
        elif len(rows):
            vectors = sided(models.encoder, QUERY).encode(asked)
        by_row = np.zeros((n, vectors.shape[1]), np.float32)
        by_row[rows] = vectors

        def search(masks: Masks, sub: np.ndarray) -> SearchResult:
            return nonblank_hits(
                sub, lambda kept: snapshot.search_dense(by_row[kept], width, num_threads, masks)
            )

        return stitched(n, groups, search), vectors

    def splade() -> tuple[SearchResult, None]:
        assert models.splade_encoder is not None
        encoder = models.splade_encoder

        def search(masks: Masks, sub: np.ndarray) -> SearchResult:
            return nonblank_hits(
                sub,
                lambda kept: snapshot.search_splade(
                    encoder.encode([queries[row] for row in kept]), width, num_threads, masks
                ),
            )

        return stitched(n, groups, search), None

    calls = {"bm25": bm25, "dense": dense, "splade": splade}
    found: dict[str, SearchResult] = {}
    dense_vectors = None
    for name in legs:
        answer = runner.run(name, calls[name], len(rows), optional=name != floor, degradable=True)
        if answer is not None:
            found[name], vectors = answer
            dense_vectors = vectors if vectors is not None else dense_vectors
    return found, dense_vectors
