"""The hybrid engine: BM25, dense and learned-sparse (SPLADE) retrieval over one live
collection, fused, optionally reranked by a cross-encoder and diversified.

The collection is a sequence of immutable segments with deletion masks (``live``): documents
are added, replaced and deleted by id, and ``commit`` makes the changes visible (and durable in
the directory the engine is attached to). A search's stages run in ``stages``, over the one
snapshot it started with; the directory's format is ``live.commits``'.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from hybrid_engine.corpus import DocIds, Document, document_text
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.engine.asynchronous import AsyncEngine
from hybrid_engine.engine.attributes import EngineAttributes
from hybrid_engine.engine.format import engine_config, leg_config
from hybrid_engine.engine.lifecycle import Lifecycle
from hybrid_engine.errors import RerankerRefusedWarning
from hybrid_engine.lexical.index import BM25Index
from hybrid_engine.live import layout
from hybrid_engine.live.config import EngineConfig
from hybrid_engine.live.documents import LiveDocuments
from hybrid_engine.live.query_groups import query_groups
from hybrid_engine.live.segment import Segment
from hybrid_engine.live.state import LiveState
from hybrid_engine.metadata import Filter
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.pipeline.degradation import Health
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD
from hybrid_engine.pipeline.legs import DEFAULT_RETRIEVERS, Legs, check_legs, check_retrievers
from hybrid_engine.pipeline.plan import SearchPlan
from hybrid_engine.pipeline.rerank import RerankerVerdict, reranker_verdict
from hybrid_engine.pipeline.result import HybridResult
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH, Stack, build_retrievers
from hybrid_engine.pipeline.stages import Models, run_search
from hybrid_engine.protocols import SparseEncoder, TextEncoder
from hybrid_engine.sparse.index import SpladeIndex


class HybridIndex(Lifecycle, EngineAttributes, AsyncEngine[HybridResult]):
    """BM25, dense and SPLADE retrieval (any of them) over one live collection, fused into
    one ranking.

    Build one with ``HybridIndex.build``, assemble one from legs built apart with
    ``HybridIndex.from_legs``, or read one with ``HybridIndex.load``. Change it with ``add``,
    ``upsert`` and ``delete``; ``commit`` makes the changes visible to searches (and durable
    in the directory of ``save``/``load``).

    A cross-encoder reranks only after passing its validation gate: a model the engine
    trained (``hybrid-engine train-reranker``) carries the verdict of its held-out validation
    queries, and one that did not beat the fused ranking there is refused with a
    ``RerankerRefusedWarning``; ``search(rerank=...)`` then serves the fused ranking
    (``reranker_verdict`` says why).

    A stage that fails at search time (a model error, say) is left out of that search and
    the result says so (``HybridResult.degraded``), with a ``DegradedWarning`` once per stage;
    ``search(budget_ms=...)`` skips the optional stages the budget cannot afford
    (docs/degradation.md).

    Notes
    -----
    Thread-safety: any number of threads may ``search`` while one writes (``add``,
    ``upsert``, ``delete``, ``commit``, ``merge``; these calls are serialized). Each search
    runs on the last commit when it started, whole: never on half a commit. One engine at a
    time (thread or process) may change an index directory: the first mutation takes its
    write lock (``WriterLockedError`` when another holds it), ``close`` gives it up.
    """

    def __init__(self, state: LiveState) -> None:
        """Private: use ``build``, ``from_legs`` or ``load``."""
        super().__init__(state)
        self._reranker: CrossEncoder | None = None
        self._verdict: RerankerVerdict | None = None
        self._health = Health()

    @classmethod
    def build(
        cls,
        corpus: Iterable[Document],
        *,
        stack: Stack | None = None,
        retrievers: Sequence[str] = DEFAULT_RETRIEVERS,
        encoder: TextEncoder | None = None,
        splade_encoder: SparseEncoder | None = None,
        reranker: CrossEncoder | None = None,
        bm25_options: Mapping[str, Any] | None = None,
        dense_options: Mapping[str, Any] | None = None,
        embedding_cache: EmbeddingCache | None = None,
        num_threads: int | None = None,
        show_progress: bool = False,
    ) -> HybridIndex:
        """Index a corpus with each of ``retrievers``, keeping its texts for reranking.

        Parameters
        ----------
        corpus : iterable of str or dict
            Documents as ``add`` takes them (ids, titles, metadata); read into memory once
            (every retriever indexes the same documents). Every document needs a title or
            a text (a title alone is indexed); a document without ``_id`` gets a new random
            one (``ids.new_id``).
        retrievers : sequence of {"bm25", "dense", "splade"}
            Any of them; legs are kept in the order of ``legs.RETRIEVERS`` whatever the order
            here. Default ``legs.DEFAULT_RETRIEVERS``.
        stack : Stack, optional
            Its ``retrievers`` are the legs (its fusion, weights, depth and rerank are
            ``search(stack=...)``'s); giving it with other ``retrievers`` is a ValueError.
        encoder : TextEncoder, optional
            For ``"dense"``; the default ``Encoder.load()`` when None.
        splade_encoder : SparseEncoder, optional
            For ``"splade"``; the default ``SpladeEncoder.load()`` when None.
        reranker : CrossEncoder, optional
            The cross-encoder of ``search(rerank=...)``, through its gate (``with_reranker``).
        bm25_options : dict, optional
            Parameters of ``BM25Index.build`` for the BM25 leg, keys from
            ``legs.BM25_OPTIONS``: ``k1``, ``b``, ``method``, ``delta``, ``analyzer``,
            ``positions`` (True: phrase queries, ``search``), and ``title_weight``
            (``live.config.EngineConfig.title_weight``).
        dense_options : dict, optional
            Parameters of ``DenseIndex.build`` for the dense leg, keys from
            ``legs.DENSE_OPTIONS``: ``metric``, ``m``, ``ef_construction``, ``ef_search``,
            ``exact_threshold``, ``batch_size``. (SPLADE's build has no options but its
            encoder.) For anything else, build the legs yourself and use ``from_legs``.
        embedding_cache : EmbeddingCache, optional
            Passed to ``DenseIndex.build``.
        num_threads, show_progress
            As in the retrievers' ``build``; ``num_threads`` also sets the threads of the
            default encoders.

        Raises
        ------
        ValueError
            No or unknown retrievers, both ``stack`` and ``retrievers``, options for a
            retriever not chosen, a document ``add`` would refuse (one with neither title
            nor text, a bad id or metadata value: the message names its ``_id`` and its
            1-based number in ``corpus``), or what the retrievers' ``build`` raises.
        TypeError
            Options that are not a dict or have a key outside the valid ones (the message
            lists them), a document or value of the wrong type, or what the retrievers'
            ``build`` raises.
        """
        chosen = check_retrievers(build_retrievers(stack, retrievers))
        docs, _ = LiveDocuments.from_documents(corpus)  # every document checked, as add does
        if not len(docs):
            raise ValueError("the corpus is empty; give at least one document")
        config, encoder, splade_encoder = engine_config(
            chosen,
            bm25_options=bm25_options,
            dense_options=dense_options,
            encoder=encoder,
            splade_encoder=splade_encoder,
            num_threads=num_threads,
        )
        segment = Segment.build(
            docs,
            config,
            encoder=encoder,
            splade_encoder=splade_encoder,
            embedding_cache=embedding_cache,
            num_threads=num_threads,
            show_progress=show_progress,
        )
        if segment.splade is not None:
            config = config.with_splade_scale(segment.splade.scale)
        engine = cls(_single(config, segment, encoder, splade_encoder))
        return engine if reranker is None else engine.with_reranker(reranker)

    @classmethod
    def from_legs(
        cls,
        corpus: Iterable[Document],
        *,
        bm25: BM25Index | None = None,
        dense: DenseIndex | None = None,
        splade: SpladeIndex | None = None,
        reranker: CrossEncoder | None = None,
    ) -> HybridIndex:
        """An index over legs built apart (with options, encoders or an ``add`` of your own),
        with the documents' texts for reranking.

        Parameters
        ----------
        corpus : iterable of str or dict
            The documents every leg was built from, in the same order, as in ``build``: their
            text (title and text) is what the cross-encoder reads, and their ``_id``s (or
            positions, when they have none) must be each leg's ``doc_ids``.
        bm25, dense, splade : optional
            At least one; shared, not copied. The dense leg needs its text ``encoder``.
        reranker : CrossEncoder, optional
            As in ``build``.

        Raises
        ------
        ValueError
            No leg, a leg holding other documents than ``corpus`` (another count, ids, or id
            order: the message names the first difference), a dense leg without encoder, or
            a document ``build`` refuses (one with neither title nor text, a bad id...).
        TypeError
            A leg of the wrong class, or a document that is not ``str`` or a dict of ``str``.
        """
        corpus = list(corpus)
        legs = Legs(bm25, dense, splade)
        ids = [document_text(doc, i)[1] for i, doc in enumerate(corpus)]
        check_legs(legs, DocIds.from_list(ids))
        docs, _ = LiveDocuments.from_documents(corpus, positions=True)  # the legs' ids
        config = leg_config(legs)
        encoder = dense.encoder if dense is not None else None
        splade_encoder = splade.encoder if splade is not None else None
        engine = cls(_single(config, Segment(docs.compressed(), *legs), encoder, splade_encoder))
        return engine if reranker is None else engine.with_reranker(reranker)

    def pinned(self) -> HybridIndex:
        """This engine fixed to its last commit: every search of the copy runs on that
        commit, whatever is committed (or merged) later.

        Several searches whose results are combined by position (fused, or read against one
        result's documents, as the query strategies do) must run on one commit: a merge in
        between renumbers the positions. The copy shares the legs, models and counts; it
        cannot change the index (``PinnedEngineError``: write through this engine). Pinning
        a pinned engine keeps its commit.
        """
        engine = copy.copy(self)
        if engine._pinned is None:
            engine._pinned = self._state.snapshot
        return engine

    def with_reranker(self, reranker: CrossEncoder | None) -> HybridIndex:
        """This index with ``reranker`` as the cross-encoder of ``search(rerank=...)``.

        The legs are shared, not copied. The reranker goes through its validation gate
        (``rerank.reranker_verdict``): one whose training record says it did not beat the
        fused ranking on held-out validation queries is refused with a
        ``RerankerRefusedWarning``, and reranking then serves the fused ranking; an accepted
        one reranks in the mode validation chose (plain order or a blend weight).

        Parameters
        ----------
        reranker : CrossEncoder or None
            None detaches the current one.

        Raises
        ------
        ValueError
            The reranker's validation record is unreadable.
        """
        engine = copy.copy(self)
        engine._reranker, engine._verdict = reranker, None
        engine._health = Health()  # another engine: its own counts and stage estimates
        for leg in engine._unloaded:
            engine._health.warned(leg)  # warned at load
        if reranker is not None:
            engine._verdict = reranker_verdict(reranker.name, reranker.training)
            if not engine._verdict.use:
                warnings.warn(engine._verdict.message, RerankerRefusedWarning, stacklevel=2)
        return engine

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
    ) -> HybridResult:
        """Search every retriever, fuse their top ``depth``, optionally rerank the fused top
        ``rerank`` by the cross-encoder, optionally re-order by MMR.

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
            raise their ``IndexFormatError`` as it is.
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
            With ``timings`` in milliseconds per stage.

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
        """
        state = self._state
        plan = SearchPlan.checked(
            queries,
            k,
            retrievers=self._planned_retrievers,
            verdict=self._verdict,
            dim=state.encoder.dim if state.encoder is not None else None,
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
        snapshot = self._snapshot  # one commit for the whole search
        plan = plan.bounded(snapshot.num_live)
        reranker = self._reranker if plan.rerank is not None else None
        models = Models(state.encoder, state.splade_encoder, reranker)
        snapshot.check_filter(plan.where)
        groups = query_groups(snapshot, plan.texts, snapshot.allowed(plan.where))
        return run_search(
            plan,
            snapshot,
            self._planned_retrievers,
            plan.texts,
            models,
            groups,
            num_threads,
            plan.query_vectors,
            health=self._health,
            unloaded=self._unloaded,
        )

    @property
    def _planned_retrievers(self) -> tuple[str, ...]:
        """The retrievers searches are planned for: those loaded and those whose model was
        not (so ``weights`` may still name them)."""
        return check_retrievers((*self.retrievers, *self._unloaded))


def _single(
    config: EngineConfig,
    segment: Segment,
    encoder: TextEncoder | None,
    splade_encoder: SparseEncoder | None,
) -> LiveState:
    """The in-memory state of a new engine of one segment."""
    return LiveState(
        config,
        [segment],
        [layout.segment_name(0)],
        [None],
        encoder=encoder,
        splade_encoder=splade_encoder,
        next_segment=1,
    )
