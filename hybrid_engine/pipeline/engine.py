"""The hybrid engine: BM25, dense and learned-sparse (SPLADE) retrieval over one corpus,
fused, optionally reranked by a cross-encoder and diversified.

The legs are built (or checked, from prebuilt ones) in ``legs``, a search's stages run in
``stages``, and the saved directory is ``engine_format``'s.
"""

from __future__ import annotations

import copy
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from hybrid_engine.checks import check_int, check_k, check_queries, check_texts
from hybrid_engine.corpus import DocIds, Document, document_text, document_title
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.lexical.bm25 import BM25Index
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.packed import PackedStrings
from hybrid_engine.pipeline.engine_format import read_engine, write_engine
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD
from hybrid_engine.pipeline.legs import (
    DEFAULT_RETRIEVERS,
    Legs,
    build_legs,
    check_legs,
    check_retrievers,
    leg_weights,
)
from hybrid_engine.pipeline.rerank import RerankerVerdict, reranker_verdict
from hybrid_engine.pipeline.stages import HybridResult, SearchPlan, run_search
from hybrid_engine.protocols import SparseEncoder, TextEncoder
from hybrid_engine.sparse.index import SpladeIndex

DEFAULT_DEPTH = 100
"""Hits each retriever hands to fusion."""


class RerankerRefusedWarning(UserWarning):
    """A cross-encoder failed its validation gate; the engine serves the fused ranking."""


class HybridIndex:
    """BM25, dense and SPLADE retrieval (any of them) over the same documents, fused into one
    ranking.

    Build one with ``HybridIndex.build``, assemble one from legs built apart with
    ``HybridIndex.from_legs``, or read one with ``HybridIndex.load``.

    A cross-encoder reranks only after passing its validation gate: a model the engine
    trained (``hybrid-engine train-reranker``) carries the verdict of its held-out validation
    queries, and one that did not beat the fused ranking there is refused with a
    ``RerankerRefusedWarning``; ``search(rerank=...)`` then serves the fused ranking
    (``reranker_verdict`` says why).

    Notes
    -----
    Thread-safe for ``search`` (each stage is); not while ``save`` runs elsewhere.
    """

    def __init__(
        self,
        bm25: BM25Index | None,
        dense: DenseIndex | None,
        splade: SpladeIndex | None,
        texts: PackedStrings,
        titles: PackedStrings,
    ) -> None:
        """Private: use ``build`` or ``load``."""
        self._bm25 = bm25
        self._dense = dense
        self._splade = splade
        self._texts = texts
        self._titles = titles
        first = next(leg for leg in (bm25, dense, splade) if leg is not None)
        self._doc_ids = first.doc_ids
        self._reranker: CrossEncoder | None = None
        self._verdict: RerankerVerdict | None = None

    @classmethod
    def build(
        cls,
        corpus: Iterable[Document],
        *,
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
            Documents as in ``BM25Index.build``; read into memory once (every retriever
            indexes the same documents). Every document needs some text when ``"dense"`` or
            ``"splade"`` is used.
        retrievers : sequence of {"bm25", "dense", "splade"}
            Any of them; legs are kept in the order of ``legs.RETRIEVERS`` whatever the order
            here. Default ``legs.DEFAULT_RETRIEVERS``.
        encoder : TextEncoder, optional
            For ``"dense"``; the default ``Encoder.load()`` when None.
        splade_encoder : SparseEncoder, optional
            For ``"splade"``; the default ``SpladeEncoder.load()`` when None.
        reranker : CrossEncoder, optional
            The cross-encoder of ``search(rerank=...)``, through its gate (``with_reranker``).
        bm25_options : dict, optional
            Parameters of ``BM25Index.build`` for the BM25 leg, keys from
            ``legs.BM25_OPTIONS``: ``k1``, ``b``, ``method``, ``delta``, ``analyzer``.
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
            No or unknown retrievers, options for a retriever not chosen, or what the
            retrievers' ``build`` raises.
        TypeError
            Options that are not a dict or have a key outside the valid ones (the message
            lists them), or what the retrievers' ``build`` raises.
        """
        chosen = check_retrievers(retrievers)
        documents = list(corpus)
        texts = [document_text(doc, i)[0] for i, doc in enumerate(documents)]
        if "dense" in chosen or "splade" in chosen:
            check_texts(texts, "document")  # blank documents fail before any encoding
        bm25, dense, splade = build_legs(
            documents,
            chosen,
            encoder=encoder,
            splade_encoder=splade_encoder,
            bm25_options=bm25_options,
            dense_options=dense_options,
            embedding_cache=embedding_cache,
            num_threads=num_threads,
            show_progress=show_progress,
        )
        titles = PackedStrings.from_strings([document_title(doc) for doc in documents])
        engine = cls(bm25, dense, splade, PackedStrings.from_strings(texts), titles)
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
            what reading ``corpus`` raises.
        TypeError
            A leg of the wrong class, or a document that is not ``str`` or a dict of ``str``.
        """
        corpus = list(corpus)
        documents = [document_text(doc, i) for i, doc in enumerate(corpus)]
        legs = Legs(bm25, dense, splade)
        check_legs(legs, DocIds.from_list([doc_id for _, doc_id in documents]))
        engine = cls(
            *legs,
            PackedStrings.from_strings([text for text, _ in documents]),
            PackedStrings.from_strings([document_title(doc) for doc in corpus]),
        )
        return engine if reranker is None else engine.with_reranker(reranker)

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
        if reranker is not None:
            engine._verdict = reranker_verdict(reranker.name, reranker.training)
            if not engine._verdict.use:
                warnings.warn(engine._verdict.message, RerankerRefusedWarning, stacklevel=2)
        return engine

    @property
    def reranker(self) -> CrossEncoder | None:
        """The cross-encoder given, refused or not (see ``reranker_verdict``)."""
        return self._reranker

    @property
    def reranker_verdict(self) -> RerankerVerdict | None:
        """The gate's decision about ``reranker``: used or not, the blend, and why."""
        return self._verdict

    @property
    def texts(self) -> PackedStrings:
        """The text of every document (title and text), as the cross-encoder reads it."""
        return self._texts

    @property
    def titles(self) -> PackedStrings:
        """The title of every document, ``""`` where it has none (``texts`` starts with the
        title and a space where it has one)."""
        return self._titles

    @property
    def retrievers(self) -> tuple[str, ...]:
        """The retrievers this index combines."""
        return Legs(self._bm25, self._dense, self._splade).retrievers

    @property
    def bm25(self) -> BM25Index | None:
        """The BM25 leg, if any."""
        return self._bm25

    @property
    def dense(self) -> DenseIndex | None:
        """The dense leg, if any."""
        return self._dense

    @property
    def splade(self) -> SpladeIndex | None:
        """The SPLADE leg, if any."""
        return self._splade

    @property
    def doc_ids(self) -> DocIds:
        """The corpus ``_id`` of every position."""
        return self._doc_ids

    def __len__(self) -> int:
        return len(self._doc_ids)

    def __repr__(self) -> str:
        return f"HybridIndex({len(self)} documents, retrievers={list(self.retrievers)})"

    def search(
        self,
        queries: str | Sequence[str] | np.ndarray,
        k: int = 10,
        *,
        fusion: str = DEFAULT_METHOD,
        weights: Mapping[str, float] | None = None,
        depth: int = DEFAULT_DEPTH,
        rerank: int | None = None,
        blend: float | None = None,
        mmr: float | None = None,
        mmr_candidates: int = 30,
        num_threads: int | None = None,
    ) -> HybridResult:
        """Search every retriever, fuse their top ``depth``, optionally rerank the fused top
        ``rerank`` by the cross-encoder, optionally re-order by MMR.

        Parameters
        ----------
        queries : str, sequence of str or 1-d numpy array of str
            Query texts. An empty or blank one is a query without hits: it is not encoded,
            and its row is all padding.
        k : int
            Hits per query (rows padded -1 / -inf as in every retriever).
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
        num_threads : int, optional
            Threads of the BM25, dense and SPLADE searches. The ONNX models run in the threads
            they were loaded with (``Encoder.load(num_threads=...)``, or ``num_threads`` of
            ``build``/``load`` for the default ones).

        Returns
        -------
        HybridResult
            With ``timings`` in milliseconds per stage.

        Raises
        ------
        ValueError, TypeError
            Bad queries or parameters (as the stages raise them); ``mmr`` without the dense leg;
            ``rerank`` without a reranker; ``weights`` that name a retriever the index does
            not combine (ValueError) or that are not a dict (TypeError).
        """
        texts = check_queries(queries)
        plan_weights = leg_weights(weights, self.retrievers)
        if mmr is not None and self._dense is None:
            raise ValueError(
                "mmr needs the dense retriever; build with retrievers=('bm25', 'dense')"
            )
        if rerank is not None and self._reranker is None:
            raise ValueError(
                "rerank needs a cross-encoder: pass reranker=CrossEncoder.load(...) to build or "
                "load, or use engine.with_reranker(...)"
            )
        verdict = self._verdict if rerank is not None else None
        reranking = verdict is not None and verdict.use  # refused: serve the fused ranking
        k = check_k(k)
        plan = SearchPlan(
            k=k,
            fusion=fusion,
            weights=plan_weights,
            depth=check_int("depth", depth, 1),
            rerank=check_int("rerank", rerank, 1) if reranking else None,
            blend=blend if blend is not None or verdict is None else verdict.blend,
            mmr=mmr,
            mmr_pool=max(k, check_int("mmr_candidates", mmr_candidates, 1)),
        )
        reranker = self._reranker if reranking else None
        legs = Legs(self._bm25, self._dense, self._splade)
        return run_search(plan, legs, texts, self._texts, reranker, num_threads)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to directory ``path`` atomically, every leg inside it and the name
        and variant of each leg's prepared model (layout in ``engine_format``)."""
        legs = Legs(self._bm25, self._dense, self._splade)
        write_engine(path, legs, self._texts, self._titles)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        encoder: TextEncoder | None = None,
        splade_encoder: SparseEncoder | None = None,
        reranker: CrossEncoder | None = None,
        num_threads: int | None = None,
        mmap: bool = False,
    ) -> HybridIndex:
        """Read an index written by ``save``.

        Parameters
        ----------
        encoder : TextEncoder, optional
            For the dense leg's text queries; it must be the model that built the index. None:
            the prepared model ``save`` recorded, e.g. ``Encoder.load("all-MiniLM-L6-v2",
            variant="int8")`` (required for a leg built with an encoder of your own).
        splade_encoder : SparseEncoder, optional
            For the SPLADE leg, as ``encoder`` is for the dense one (``SpladeEncoder.load``).
        reranker : CrossEncoder, optional
            The cross-encoder of ``search(rerank=...)``, through its gate (``with_reranker``).
        num_threads : int, optional
            Threads of the default encoders (all cores when None).
        mmap : bool
            Memory-map the legs' arrays.

        Raises
        ------
        IndexFormatError
            A missing, corrupt or foreign directory, or legs that disagree.
        ValueError
            An encoder of another model than the leg's, or none for a leg built with an
            encoder that is not a prepared model.
        ModelNotFoundError
            No encoder given, and the recorded model is not prepared here.
        """
        legs, texts, titles = read_engine(
            path,
            encoder=encoder,
            splade_encoder=splade_encoder,
            num_threads=num_threads,
            mmap=mmap,
        )
        engine = cls(*legs, texts, titles)
        return engine if reranker is None else engine.with_reranker(reranker)
