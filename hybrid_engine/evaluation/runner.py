"""The retrievers of the engine's ablation harness, by name: how each is built over a dataset,
then scored (``scoring``)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hybrid_engine.checks import check_names
from hybrid_engine.corpus import document_text
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.evaluation.datasets import Dataset
from hybrid_engine.evaluation.scoring import (
    DEFAULT_METRICS,
    RetrieverReport,
    Searcher,
    evaluate_searcher,
)
from hybrid_engine.feedback import RM3, Rocchio
from hybrid_engine.lexical.index import BM25Index
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.models.splade import SpladeEncoder
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD, fuse
from hybrid_engine.pipeline.rerank import RERANK_DEPTH
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH
from hybrid_engine.result import SearchResult
from hybrid_engine.sparse.index import SpladeIndex
from hybrid_engine.strategies import Generate, decompose, fuse_strategies, hyde, multi_hop

DEFAULT_GENERATOR = "gemma3-270m"
"""The local generator of the strategy configurations."""


@dataclass(frozen=True)
class BuildOptions:
    """How ``evaluate_retriever`` builds a configuration.

    Attributes
    ----------
    num_threads : int, optional
        Threads of every stage and model (all cores when None).
    show_progress : bool
        Progress bars while indexing.
    reranker : str or path-like, optional
        The ``rerank`` configuration's cross-encoder: a prepared folder, or the name of one in
        ``store.models_dir()``.
    rerank_variant : {"int8", "fp32"}, optional
        Its variant; when None, the one its validation gate scored (``CrossEncoder.load``).
    rerank_max_length : int, optional
        Tokens per (query, passage) pair; when None, the validated ``max_length``, else the
        model's.
    generator : callable str -> str, optional
        The text generator of the strategy configurations (``hyde``, ``decompose``,
        ``multi-hop``, ``fused-strategies``); when None, ``generation.load_generator(
        generator_name)``, loaded only when one of them is built (so the others never import
        llama-cpp).
    generator_name : str
        The local model ``load_generator`` loads when ``generator`` is None.
    fusion : str
        The fusion method (``fusion.METHODS``) of ``hybrid``, ``hybrid3`` and ``rerank``.
    model : str or path-like, optional
        The bi-encoder of every configuration with a dense leg: a prepared folder, or the name
        of one in ``store.models_dir()`` (``models prepare-encoder``); the default model when
        None.
    """

    num_threads: int | None = None
    show_progress: bool = False
    reranker: str | os.PathLike[str] | None = None
    rerank_variant: str | None = None
    rerank_max_length: int | None = None
    generator: Generate | None = None
    generator_name: str = DEFAULT_GENERATOR
    fusion: str = DEFAULT_METHOD
    model: str | os.PathLike[str] | None = None


Builder = Callable[[Dataset, BuildOptions], tuple[Searcher, Sequence[str]]]


def documents_with_text(dataset: Dataset) -> list[dict[str, Any]]:
    """The corpus without documents whose title and text are empty (Cranfield has two).

    The encoder refuses them, and they match no BM25 query, so every retriever that embeds
    builds on this corpus (a judged empty document still counts, as never retrieved).
    """
    return [doc for i, doc in enumerate(dataset.corpus) if document_text(doc, i)[0].strip()]


def _bm25(dataset: Dataset, options: BuildOptions) -> tuple[Searcher, Sequence[str]]:
    threads = options.num_threads
    index = BM25Index.build(
        dataset.corpus, num_threads=threads, show_progress=options.show_progress
    )
    return (lambda queries, k: index.search(queries, k, num_threads=threads)), index.doc_ids


def _dense(variant: str | None) -> Builder:
    """The dense retriever with the bi-encoder's ``variant`` (None: its default, int8)."""

    def build(dataset: Dataset, options: BuildOptions) -> tuple[Searcher, Sequence[str]]:
        index = _dense_index(documents_with_text(dataset), options, variant)
        return (lambda queries, k: index.search(queries, k)), index.doc_ids

    return build


def _dense_index(
    corpus: list[dict[str, Any]], options: BuildOptions, variant: str | None = None
) -> DenseIndex:
    """The dense leg over ``corpus`` with ``options.model``'s ``variant`` (None: its
    preferred one)."""
    return DenseIndex.build(
        corpus,
        encoder=Encoder.load(options.model, variant=variant, num_threads=options.num_threads),
        embedding_cache=EmbeddingCache(),
        show_progress=options.show_progress,
    )


def _splade(dataset: Dataset, options: BuildOptions) -> tuple[Searcher, Sequence[str]]:
    threads = options.num_threads
    index = SpladeIndex.build(
        documents_with_text(dataset),
        encoder=SpladeEncoder.load(num_threads=threads),
        show_progress=options.show_progress,
    )
    return (lambda queries, k: index.search(queries, k, num_threads=threads)), index.doc_ids


def build_hybrid(
    dataset: Dataset,
    num_threads: int | None = None,
    show_progress: bool = False,
    retrievers: Sequence[str] = ("bm25", "dense"),
    model: str | os.PathLike[str] | None = None,
) -> HybridIndex:
    """The ``hybrid`` retriever's index: BM25 and dense with the bi-encoder ``model`` (a
    prepared folder or name; the default, in its int8 variant, when None) (plus fp32 SPLADE
    when ``retrievers`` names it) over the documents with text, corpus embeddings through the
    default ``EmbeddingCache``."""
    return HybridIndex.build(
        documents_with_text(dataset),
        retrievers=retrievers,
        encoder=Encoder.load(model, num_threads=num_threads),
        splade_encoder=(
            SpladeEncoder.load(num_threads=num_threads) if "splade" in retrievers else None
        ),
        embedding_cache=EmbeddingCache(),
        num_threads=num_threads,
        show_progress=show_progress,
    )


def _hybrid(retrievers: Sequence[str], rerank: bool = False) -> Builder:
    def build(dataset: Dataset, options: BuildOptions) -> tuple[Searcher, Sequence[str]]:
        """``HybridIndex`` of ``retrievers``, their top ``DEFAULT_DEPTH`` fused by
        ``options.fusion``, the fused top ``RERANK_DEPTH`` reranked when ``rerank``."""
        threads = options.num_threads
        engine = build_hybrid(dataset, threads, options.show_progress, retrievers, options.model)
        if rerank:
            engine = engine.with_reranker(load_reranker(options))
        search = hybrid_searcher(engine, options.fusion, rerank=rerank, num_threads=threads)
        return search, engine.doc_ids

    return build


def hybrid_searcher(
    engine: HybridIndex, fusion: str, *, rerank: bool, num_threads: int | None
) -> Searcher:
    """The search of the ``hybrid``, ``hybrid3`` and ``rerank`` configurations over
    ``engine``: each leg's top ``max(k, DEFAULT_DEPTH)`` fused by ``fusion``, the fused top
    ``RERANK_DEPTH`` reranked by the engine's cross-encoder when ``rerank``."""

    def search(queries: Sequence[str], k: int) -> SearchResult:
        return engine.search(
            queries,
            k,
            fusion=fusion,
            depth=max(k, DEFAULT_DEPTH),
            rerank=RERANK_DEPTH if rerank else None,
            num_threads=num_threads,
        )

    return search


def _bm25_rm3(dataset: Dataset, options: BuildOptions) -> tuple[Searcher, Sequence[str]]:
    """BM25 with RM3 at its defaults (Anserini's: docs/feedback.md)."""
    threads = options.num_threads
    index = BM25Index.build(
        dataset.corpus, num_threads=threads, show_progress=options.show_progress
    )
    rm3 = RM3(index, dataset.corpus)
    return (lambda queries, k: rm3.search(queries, k, num_threads=threads)), index.doc_ids


def _dense_rocchio(dataset: Dataset, options: BuildOptions) -> tuple[Searcher, Sequence[str]]:
    """The int8 dense leg with Rocchio at its defaults."""
    index = _dense_index(documents_with_text(dataset), options)
    rocchio = Rocchio(index)
    return (lambda queries, k: rocchio.search(queries, k)), index.doc_ids


def _hybrid_rm3(dataset: Dataset, options: BuildOptions) -> tuple[Searcher, Sequence[str]]:
    """BM25 with RM3 and the int8 dense leg, their top ``DEFAULT_DEPTH`` fused as ``hybrid``
    fuses them (the default method)."""
    threads = options.num_threads
    corpus = documents_with_text(dataset)
    bm25 = BM25Index.build(corpus, num_threads=threads, show_progress=options.show_progress)
    rm3 = RM3(bm25, corpus)
    dense = _dense_index(corpus, options)

    def search(queries: Sequence[str], k: int) -> SearchResult:
        depth = max(k, DEFAULT_DEPTH)
        legs = [rm3.search(queries, depth, num_threads=threads), dense.search(queries, depth)]
        return fuse(legs, k, depth=depth)

    return search, dense.doc_ids


def load_generator(options: BuildOptions) -> Generate:
    """``options.generator``, else ``hybrid_engine.generation.load_generator(
    options.generator_name)`` (imported here, so that only the strategies need llama-cpp)."""
    if options.generator is not None:
        return options.generator
    from hybrid_engine.generation import load_generator as load_local

    generate: Generate = load_local(options.generator_name)
    return generate


_STRATEGIES: dict[str, Callable[..., SearchResult]] = {
    "hyde": hyde,
    "decompose": decompose,
    "multi-hop": multi_hop,
    "fused-strategies": fuse_strategies,
}


def _strategy(name: str) -> Builder:
    """``hybrid`` searched through the strategy ``name`` with ``options``' generator, at its
    defaults (``fused-strategies``: RRF of hybrid, hyde, decompose and multi-hop)."""

    def build(dataset: Dataset, options: BuildOptions) -> tuple[Searcher, Sequence[str]]:
        generate = load_generator(options)
        engine = build_hybrid(
            dataset, options.num_threads, options.show_progress, model=options.model
        )
        strategy = _STRATEGIES[name]

        def search(queries: Sequence[str], k: int) -> SearchResult:
            return strategy(engine, queries, generate, k=k, depth=max(k, DEFAULT_DEPTH))

        return search, engine.doc_ids

    return build


def load_reranker(options: BuildOptions) -> CrossEncoder:
    """``options.reranker`` (a folder, or a name ``CrossEncoder.load`` finds in the models
    folder) loaded with the options' variant, threads and max_length.

    Raises
    ------
    ValueError
        ``options.reranker`` is None (the message says how to get one).
    """
    if options.reranker is None:
        raise ValueError(
            "the rerank configuration needs a cross-encoder: give --reranker NAME (or a folder), "
            "one prepared by `hybrid-engine train-reranker` or `hybrid-engine models "
            "prepare-reranker`"
        )
    return CrossEncoder.load(
        options.reranker,
        variant=options.rerank_variant,
        num_threads=options.num_threads,
        max_length=options.rerank_max_length,
    )


RETRIEVERS: dict[str, Builder] = {
    "bm25": _bm25,
    "dense": _dense(None),
    "dense-fp32": _dense("fp32"),
    "splade": _splade,
    "hybrid": _hybrid(("bm25", "dense")),
    "hybrid3": _hybrid(("bm25", "dense", "splade")),
    "rerank": _hybrid(("bm25", "dense"), rerank=True),
    "bm25+rm3": _bm25_rm3,
    "dense+rocchio": _dense_rocchio,
    "hybrid+rm3": _hybrid_rm3,
    **{name: _strategy(name) for name in _STRATEGIES},
}
"""Configuration name -> function building it over a dataset's corpus, returning (search, doc
ids). ``rerank`` is ``hybrid`` with its fused top ``RERANK_DEPTH`` reranked by
``BuildOptions.reranker`` (through the reranker's validation gate); ``bm25+rm3``,
``dense+rocchio`` and ``hybrid+rm3`` add pseudo-relevance feedback (docs/feedback.md);
``hyde``, ``decompose``, ``multi-hop`` and ``fused-strategies`` search ``hybrid`` through the
query strategies with ``BuildOptions.generator`` (docs/strategies.md). Self-query is not here:
it needs metadata and a schema, which the BEIR collections lack
(``benchmarks/reports/strategy_report.py`` measures it on synthetic metadata)."""

GENERATIVE = ("hyde", "decompose", "multi-hop", "fused-strategies")
"""The configurations that call a generator."""


def parse_retrievers(spec: str) -> list[str]:
    """Retriever names of a comma-separated list such as ``"bm25,dense"``
    (``checks.check_names``: an empty list or an unknown name is a ValueError)."""
    return check_names(spec, sorted(RETRIEVERS), "retrievers", "retrievers")


def evaluate_retriever(
    dataset: Dataset,
    retriever: str,
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
    options: BuildOptions = BuildOptions(),
) -> RetrieverReport:
    """Build ``retriever`` over ``dataset.corpus``, search all its queries and score the run.

    Raises
    ------
    ValueError
        An unknown retriever name (the message lists the known ones) or metric name;
        ``rerank`` without ``options.reranker``.
    """
    if retriever not in RETRIEVERS:
        raise ValueError(f"unknown retriever {retriever!r}; choose from {sorted(RETRIEVERS)}")
    start = time.perf_counter()
    search, doc_ids = RETRIEVERS[retriever](dataset, options)
    build_s = time.perf_counter() - start
    return evaluate_searcher(dataset, search, doc_ids, build_s=build_s, metrics=metrics)
