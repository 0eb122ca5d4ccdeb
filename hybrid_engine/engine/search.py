"""The one ``search`` of every kind of index: its options, their defaults and their
documentation in one signature, checked once (``SearchPlan.checked``) and then run by the
kind (``HybridIndex`` over its live collection, ``ShardedIndex`` over its shards; a
``ParentDocumentIndex`` passes them to its inner engine)."""

from __future__ import annotations

import inspect
import time
from collections.abc import Mapping, Sequence
from typing import Any, Generic, TypeVar

import numpy as np

from hybrid_engine.metadata import Filter
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD
from hybrid_engine.pipeline.plan import SearchPlan
from hybrid_engine.pipeline.rerank import RerankerVerdict
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH, Stack

_R = TypeVar("_R")


class Searchable(Generic[_R]):
    """``search`` for an index kind that says what a search is planned for (``_searched``)
    and runs a checked plan (``_run``)."""

    def search(
        self,
        queries: str | Sequence[str] | np.ndarray,
        k: int = 10,
        *,
        stack: Stack | None = None,
        fusion: str = DEFAULT_METHOD,
        weights: Mapping[str, float] | None = None,
        depth: int = DEFAULT_DEPTH,
        rerank: int | None = None,
        blend: float | None = None,
        mmr: float | None = None,
        mmr_candidates: int = 30,
        filter: Mapping[str, Any] | Filter | None = None,
        num_threads: int | None = None,
        query_vectors: np.ndarray | None = None,
        strict: bool = False,
        budget_ms: float | None = None,
        offset: int = 0,
        min_score: float | None = None,
        facets: Sequence[str] | None = None,
        decay: Mapping[str, Any] | None = None,
        expression: str | None = None,
    ) -> _R:
        """Search every retriever, fuse their top ``depth``, optionally rerank the fused top
        ``rerank`` by the cross-encoder, optionally re-order by MMR.

        The same on every kind of index. A ``ShardedIndex`` returns what one ``HybridIndex``
        over all its shards would: ``filter`` runs inside every leg of every shard,
        ``query_vectors`` go to every shard's dense leg, and ``budget_ms`` can skip the
        reranker only (the legs run in one call on each shard, together), by its running
        estimate (``ShardedResult.skipped``).

        Parameters
        ----------
        queries : str, sequence of str or 1-d numpy array of str
            Query texts. An empty or blank one is a query without hits: it is not encoded,
            and its row is all padding. With ``bm25_options={"positions": True}``, the
            phrases a query quotes (``"heart attack"``) are required in every leg: its hits
            hold each of them (``lexical.phrases``; docs/lexical.md "Phrases"); elsewhere
            quotes are punctuation.
        k : int
            Hits per query, >= 1. The result has ``min(k, len(self))`` columns (the live
            documents; 0 when there are none), and no stage asks for more hits than there are
            documents, so a huge ``k`` costs what ``k = len(self)`` does. Rows are padded -1 /
            -inf where fewer documents match (a filter, a blank query).
        stack : Stack, optional
            Sets ``fusion``, ``weights``, ``depth`` and ``rerank``; its retrievers must be
            this index's (``build(stack=...)``), and giving it with any of those four away
            from its default is a ValueError. None: those four as given.
        fusion : str
            ``fusion.fuse``'s method.
        weights : dict of str to float, optional
            Fusion weight by retriever name (``retrievers``), e.g.
            ``{"bm25": 1.0, "dense": 2.0}``; a retriever not named weighs 1.0. Finite, >= 0 and
            not all 0 (``fusion.fuse``). None: 1.0 each.
        depth : int
            Hits each retriever hands to fusion (at least ``k`` is used).
        rerank : int, optional
            Fused hits per query the cross-encoder re-orders (``rerank.rerank``'s ``depth``;
            30 pairs of 48 tokens take a MiniLM-L6 int8 cross-encoder about 100 ms on 2 cores,
            README "Fusion").
            Needs a reranker (``build``/``load``/``with_reranker``); when its gate refused
            it, the fused ranking is served and ``timings`` has no ``"rerank"``. None: no
            reranking.
        blend : float, optional
            ``rerank.rerank``'s blend weight of the cross-encoder against the fused rank;
            None uses what the reranker's validation chose.
        mmr : float, optional
            MMR's lambda in ``[0, 1]`` (needs the dense leg): ``k`` hits are picked by maximal
            marginal relevance (``mmr.mmr``) from the top ``max(k, mmr_candidates)`` after
            fusion and reranking. None: no MMR.
        mmr_candidates : int
            Candidates MMR picks from, >= 1; at least ``k`` are used, so a row is short of
            ``k`` hits only when fewer documents were retrieved.
        filter : dict or Filter, optional
            Only documents whose metadata match it are searched (docs/filters.md); an
            operand of another type than the values the index holds in its field is a
            TypeError. None: every document.
        num_threads : int, optional
            Threads of the BM25, dense and SPLADE searches. The ONNX models run in the threads
            they were loaded with (``Encoder.load(num_threads=...)``, or ``num_threads`` of
            ``build``/``load`` for the default ones).
        query_vectors : numpy.ndarray, optional
            float32 ``(n_queries, dim)``: the dense leg searches these instead of encoding
            the query texts (HyDE's mean of query and passage embeddings, say); BM25 and
            SPLADE still search the texts, and MMR uses these vectors. A blank query still
            has no hits. Needs the dense leg. None: the texts are encoded.
        strict : bool
            Raise a ``StageError`` (the stage's error chained) when a stage fails, instead of
            serving without it (``HybridResult.degraded``, a ``DegradedWarning`` once per
            stage, counted in ``degradations``); damaged index files found while searching
            raise their ``IndexFormatError`` as it is. On a ``ShardedIndex``: raise
            ``ShardUnavailableError`` when a shard does not answer, instead of answering
            from the others (``ShardedResult.missing_shards`` names it).
        budget_ms : float, optional
            Milliseconds the search should take: the optional stages (the reranker, then the
            legs but BM25, costliest first) are skipped while their running estimates
            overrun it, and each that runs is abandoned at the end of the budget
            (``HybridResult.skipped``). BM25, fusion and MMR always run, so they can
            overrun it (docs/degradation.md). None: no budget.
        offset : int
            Hits skipped before the ``k`` returned: the page ``offset // k + 1`` of ``k`` hits
            is hits ``offset`` to ``offset + k`` of one ranking of ``offset + k``, every stage
            searched as deep as that ranking needs (each leg's ``depth``, the reranker's and
            MMR's candidates, at least ``offset + k``). Pages of one query are slices of one
            ranking while ``offset + k <= depth`` (100 by default): past it the legs search
            deeper, and a fusion that normalises scores over each leg's hits (DBSF, min-max)
            can then order a few hits differently; raise ``depth`` to page further
            consistently. 0: the first page.
        min_score : float, optional
            Leave out the fused hits whose relevance is below it: the fused score mapped onto
            [0, 1] the same way for every fusion method (``HybridResult.relevance``; 1 is the
            best score the method can give, e.g. every leg's first hit; docs/fusion.md
            "Relevance"). Applied before reranking and MMR, so they only see hits above it; a
            row is then short of ``k`` hits (padding) when fewer pass. None: no threshold.
        facets : list of str, optional
            Metadata fields to count values of over the documents the search matched: every
            fused candidate (each leg's top ``depth`` inside the filter, above ``min_score``),
            not just the ``k`` returned (``HybridResult.facets``; docs/filters.md "Facets").
            None: no counts.
        decay : dict, optional
            Rescore the fused candidates by how far a numeric or date metadata field is from
            an origin: ``{"field": "year", "origin": 2024, "scale": 5, "offset": 0,
            "decay": 0.5, "function": "gauss"}`` (``"linear"``, ``"exp"``, ``"gauss"``, as
            Elasticsearch's; a date field holds ISO-8601 strings, ``origin`` may be
            ``"now"``, ``scale`` and ``offset`` count days); the new score is the relevance
            times the factor (1 for a document without the field), and the candidates are
            re-ordered by it before reranking and MMR (docs/fusion.md "Rescoring"). None: no
            decay.
        expression : str, optional
            Rescore the fused candidates by a formula over ``score`` (the relevance),
            ``fused`` (the fused score), ``decay`` (the decay factor) and numeric metadata
            fields by name, with ``+ - * / **`` and ``min``, ``max``, ``abs``, ``log``,
            ``exp``, ``sqrt``, e.g. ``"score * decay + 0.1 * log(1 + citations)"``; parsed, never
            evaluated as Python (``rescore.check_expression``). None: the relevance (times
            the decay).

        Returns
        -------
        HybridResult
            With ``timings`` in milliseconds per stage (a ``ShardedResult`` from a
            ``ShardedIndex``: the same reading, and each shard's time).

        Raises
        ------
        ValueError, TypeError
            Bad queries or parameters (as the stages raise them); ``mmr`` without the dense leg;
            ``rerank`` without a reranker; ``weights`` that name a retriever the index does
            not combine (ValueError) or that are not a dict (TypeError); ``query_vectors``
            without the dense leg, of another shape or not finite (ValueError) or not a
            float32 array (TypeError); both ``stack`` and fusion/weights/depth/rerank, or a
            stack of other retrievers; ``budget_ms`` not a positive number (ValueError); a
            ``filter`` comparing a field with a value of another type than the values the
            index holds in it (TypeError naming the field and both types; docs/filters.md).
        StageError
            ``strict`` and a stage failed, or every leg failed (nothing to fuse).
        IndexFormatError
            ``strict``, and a leg read a damaged part of the index that the load did not
            check (a posting list of a load without ``verify``: checked when first read).
        ShardUnavailableError
            On a ``ShardedIndex``: ``strict`` and a shard did not answer, or no shard answered.
        """
        started = time.perf_counter()
        retrievers, verdict, dim = self._searched()
        plan = SearchPlan.checked(
            queries,
            k,
            retrievers=retrievers,
            verdict=verdict,
            dim=dim,
            stack=stack,
            fusion=fusion,
            weights=weights,
            depth=depth,
            rerank=rerank,
            blend=blend,
            mmr=mmr,
            mmr_candidates=mmr_candidates,
            filter=filter,
            query_vectors=query_vectors,
            strict=strict,
            budget_ms=budget_ms,
            offset=offset,
            min_score=min_score,
            facets=facets,
            decay=decay,
            expression=expression,
        )
        return self._run(plan, num_threads, started)

    def _searched(self) -> tuple[tuple[str, ...], RerankerVerdict | None, int | None]:
        """The retrievers a search is planned for, the reranker's gate verdict (None: no
        reranker) and the dimension of the dense leg's vectors (None: no dense leg)."""
        raise NotImplementedError

    def _run(self, plan: SearchPlan, num_threads: int | None, started: float) -> _R:
        """The result of ``plan``, the legs searched in ``num_threads`` threads; ``started``
        is the search's ``time.perf_counter()`` at its call."""
        raise NotImplementedError


SEARCH_DEFAULTS: dict[str, Any] = {
    name: parameter.default
    for name, parameter in inspect.signature(Searchable.search).parameters.items()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name != "num_threads"
}
"""The default of each option ``SearchPlan.checked`` checks (all of ``search``'s but
``num_threads``), read from the one signature."""
