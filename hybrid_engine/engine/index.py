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

from hybrid_engine.corpus import DocIds, Document, document_text
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.engine.asynchronous import AsyncEngine
from hybrid_engine.engine.attributes import EngineAttributes
from hybrid_engine.engine.format import engine_config, leg_config
from hybrid_engine.engine.lifecycle import Lifecycle
from hybrid_engine.engine.search import Searchable
from hybrid_engine.errors import RerankerRefusedWarning
from hybrid_engine.lexical.index import BM25Index
from hybrid_engine.live import layout
from hybrid_engine.live.config import EngineConfig
from hybrid_engine.live.documents import LiveDocuments
from hybrid_engine.live.query_groups import query_groups
from hybrid_engine.live.segment import Segment
from hybrid_engine.live.state import LiveState
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.pipeline.degradation import Health
from hybrid_engine.pipeline.legs import DEFAULT_RETRIEVERS, Legs, check_legs, check_retrievers
from hybrid_engine.pipeline.plan import SearchPlan
from hybrid_engine.pipeline.rerank import RerankerVerdict, reranker_verdict
from hybrid_engine.pipeline.result import HybridResult
from hybrid_engine.pipeline.stack import Stack, build_retrievers
from hybrid_engine.pipeline.stages import Models, run_search
from hybrid_engine.protocols import SparseEncoder, TextEncoder
from hybrid_engine.sparse.index import SpladeIndex


class HybridIndex(Searchable[HybridResult], Lifecycle, EngineAttributes, AsyncEngine[HybridResult]):
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

    def _searched(self) -> tuple[tuple[str, ...], RerankerVerdict | None, int | None]:
        encoder = self._state.encoder
        return self._planned_retrievers, self._verdict, encoder.dim if encoder is not None else None

    def _run(self, plan: SearchPlan, num_threads: int | None, started: float) -> HybridResult:
        """``plan`` over the current commit (``run_search`` times the stages itself)."""
        state = self._state
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
