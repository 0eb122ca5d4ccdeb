"""Helpers shared by the benchmarks and their conftest: data readers, engine builders, the
timed search calls of each side, and the ratio bookkeeping."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

SCALE_PARTS = ("gcide", "wordnet", "wikipedia_summaries_en")
"""The three real-text collections of ``scale/``, concatenated in this order (253,928 docs)."""

BM25_PARAMS: dict[str, Any] = {"k1": 0.9, "b": 0.4, "method": "lucene"}
"""Scoring parameters used on both sides of every comparison."""


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a ``.jsonl`` or ``.jsonl.gz`` file."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def doc_text(doc: dict[str, Any]) -> str:
    """The indexed text of a corpus record, as ``BM25Index.build`` forms it: title + " " + text."""
    title = doc.get("title")
    return f"{title} {doc['text']}" if title else doc["text"]


def load_scale_texts(data: Path) -> list[str]:
    """gcide + wordnet + wikipedia_summaries_en of ``<data>/scale``: 253,928 texts."""
    texts: list[str] = []
    for part in SCALE_PARTS:
        texts.extend(doc_text(d) for d in read_jsonl(data / "scale" / part / "corpus.jsonl.gz"))
    return texts


# -- engines ------------------------------------------------------------------------------------


def build_ours(
    texts: list[str], analyzer: Any, num_threads: int | None = None, positions: bool = False
) -> Any:
    from hybrid_engine import BM25Index

    return BM25Index.build(
        texts, analyzer=analyzer, num_threads=num_threads, positions=positions, **BM25_PARAMS
    )


def build_bm25s(bm25s: Any, texts: list[str], stemmer: Any) -> Any:
    """bm25s with analysis included: tokenize (stopwords "en", PyStemmer english) + index."""
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(backend="numba", **BM25_PARAMS)
    retriever.index(tokens, show_progress=False)
    return retriever


def ours_search(index: Any, queries: list[str], k: int) -> Callable[[], Any]:
    """One timed call: analysis of the query text + scoring + top-k, one thread."""
    return lambda: index.search(queries, k=k, num_threads=1)


def bm25s_search(
    bm25s: Any, retriever: Any, stemmer: Any, queries: list[str], k: int
) -> Callable[[], Any]:
    """One timed call: ``bm25s.tokenize`` of the query text + ``retrieve``, one thread."""

    def run() -> Any:
        tokens = bm25s.tokenize(
            queries, stopwords="en", stemmer=stemmer, return_ids=True, show_progress=False
        )
        return retriever.retrieve(tokens, k=k, n_threads=1, show_progress=False)

    return run


# -- dense vectors ----------------------------------------------------------------------------


def clustered_vectors(
    n: int, dim: int, seed: int, *, clusters: int = 512, latent_dim: int = 32
) -> np.ndarray:
    """``n`` unit-length float32 vectors of ``dim``, shaped roughly like sentence embeddings.

    A fixed mixture (the same for every ``seed``, given ``dim``, ``clusters``, ``latent_dim``):
    ``clusters`` Gaussian topics in a ``latent_dim``-dimensional space (points spread around
    their centre with half the centres' scale), mapped into ``dim`` dimensions by a fixed random
    linear map, plus a shared offset (embeddings crowd into a cone: mean cosine ~0.3) and
    isotropic noise at a third of the signal's scale; then L2-normalised. ``seed`` draws the
    points, so documents and queries come from the same mixture with different seeds.
    """
    model = np.random.default_rng(20240601)
    centres = model.standard_normal((clusters, latent_dim))
    basis = model.standard_normal((latent_dim, dim)) / np.sqrt(latent_dim)
    offset = model.standard_normal(dim) * 0.8
    rng = np.random.default_rng(seed)
    topics = rng.integers(clusters, size=n)
    latent = centres[topics] + 0.5 * rng.standard_normal((n, latent_dim))
    x = latent @ basis + offset + 0.4 * rng.standard_normal((n, dim))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x.astype(np.float32)


# -- ratios ------------------------------------------------------------------------------------

RUNS: dict[str, tuple[str, dict[str, Any]]] = {}
"""The benchmark fixtures that ran in this session: group -> (reference side, {side: fixture})."""


def median_s(benchmark: Any) -> float | None:
    """Median seconds of a finished benchmark; None when timing is disabled."""
    stats = getattr(benchmark, "stats", None)
    return None if stats is None else float(stats.stats.median)


def record_ratio(benchmark: Any, group: str, side: str, reference: str = "ours") -> None:
    """Record one side of ``group``; once ``reference`` and another side both ran, store in both
    ``extra_info`` the ratio ``<side>_over_<reference>`` = median time of that side / median
    time of the reference (with ``reference="ours"``: above 1, ours is faster). Medians, not
    means: the machine is shared and noisy.

    With ``--benchmark-disable`` there are no timings and nothing is recorded.
    """
    if median_s(benchmark) is None:
        return
    benchmark.extra_info["median_s"] = median_s(benchmark)
    ref, sides = RUNS.setdefault(group, (reference, {}))
    sides[side] = benchmark
    if ref not in sides:
        return
    for name, other in sides.items():
        if name != ref:
            ratio = median_s(other) / median_s(sides[ref])
            other.extra_info[f"{name}_over_{ref}"] = ratio
            sides[ref].extra_info[f"{name}_over_{ref}"] = ratio


def ratio_rows() -> list[tuple[str, str, float, str, float]]:
    """(group, side, its median, reference, reference median) for every finished pair."""
    return [
        (group, name, median_s(b), ref, median_s(sides[ref]))
        for group, (ref, sides) in sorted(RUNS.items())
        if ref in sides
        for name, b in sides.items()
        if name != ref
    ]


# -- filtered dense search -----------------------------------------------------------------------


def hnswlib_filter_search(index: Any, allowed: np.ndarray) -> Callable[[np.ndarray, int], Any]:
    """The peer of ``DenseIndex.search(allowed=)``: hnswlib's own ``knn_query(filter=...)`` on
    the index's graph (its private ``_store.graph``'s links put back into hnswlib with the
    vectors: the same graph, ``ef``), with ``k``.

    The filter is a list lookup, the cheapest Python callable (hnswlib calls it once per
    visited node, holding the GIL). To give the same answer as ours, the candidates are
    rescored exactly and, when hnswlib finds fewer than ``k`` (it raises), the query is
    searched exactly over the allowed rows. Takes one query vector (unit length) or a batch.
    """
    from hybrid_engine import SearchResult
    from hybrid_engine.dense import knn
    from hybrid_engine.dense.vectors import max_norm, prepare

    vectors = index.vectors
    graph = index._store.graph.to_hnswlib(vectors, index.m, index.ef_construction)
    graph.set_ef(index.ef_search)
    lookup = allowed.tolist().__getitem__
    rows = np.flatnonzero(allowed)
    norm = max_norm(vectors)

    def search(queries: np.ndarray, k: int) -> Any:
        matrix = prepare(queries, "queries", index.metric, index.dim)
        out = SearchResult.empty(len(matrix), k)
        try:
            labels, _ = graph.knn_query(matrix, k=k, num_threads=1, filter=lookup)
        except RuntimeError:
            if len(rows):
                knn.exact_search(vectors, matrix, out.ids, out.scores, norm, rows)
            return out
        knn.top_k(vectors, matrix, labels.astype(np.int64), out.ids, out.scores)
        return out

    return search
