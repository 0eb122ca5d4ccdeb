"""The legs of a ``HybridIndex``: which retrievers it combines, each one built over the same
documents, and the fusion weights given by leg name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real
from typing import NamedTuple

from hybrid_engine.corpus import Document
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.lexical.bm25 import BM25Index
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.protocols import SparseEncoder, TextEncoder
from hybrid_engine.sparse.index import SpladeIndex

RETRIEVERS = ("bm25", "dense", "splade")
"""Retrievers a ``HybridIndex`` can combine, in the order of its legs."""
DEFAULT_RETRIEVERS = ("bm25", "dense")
"""The retrievers of ``HybridIndex.build`` by default."""


class Legs(NamedTuple):
    """An engine's retrievers, in ``RETRIEVERS`` order; None for one it does not use."""

    bm25: BM25Index | None
    dense: DenseIndex | None
    splade: SpladeIndex | None

    @property
    def retrievers(self) -> tuple[str, ...]:
        """The names of the legs present, in ``RETRIEVERS`` order."""
        return tuple(name for name, leg in zip(RETRIEVERS, self, strict=True) if leg is not None)


def check_retrievers(retrievers: Sequence[str]) -> tuple[str, ...]:
    """``retrievers`` (a name or names from ``RETRIEVERS``) in ``RETRIEVERS`` order.

    Raises
    ------
    ValueError
        None given, or an unknown name (the message lists the known ones).
    """
    if isinstance(retrievers, str):
        retrievers = [retrievers]
    unknown = [r for r in retrievers if r not in RETRIEVERS]
    if unknown or not retrievers:
        raise ValueError(f"unknown retriever(s) {unknown or retrievers}; choose from {RETRIEVERS}")
    return tuple(r for r in RETRIEVERS if r in retrievers)


def leg_weights(
    weights: Mapping[str, float] | None, retrievers: tuple[str, ...]
) -> list[float] | None:
    """Fusion weights by retriever name as ``fusion.fuse``'s sequence, in the order of
    ``retrievers`` (an engine's legs); a retriever ``weights`` does not name weighs 1.0.

    Raises
    ------
    TypeError
        ``weights`` is not a mapping (a sequence is refused: say which leg each weight is
        for), or a weight is not a number.
    ValueError
        A name that is not one of ``retrievers``.
    """
    if weights is None:
        return None
    example = dict(zip(retrievers, (1.0, 2.0, 1.0), strict=False))
    if not isinstance(weights, Mapping):
        raise TypeError(
            f"weights must be a dict of retriever name to weight, e.g. weights={example} "
            f"(retrievers not named weigh 1.0), got {type(weights).__name__}"
        )
    unknown = [name for name in weights if name not in retrievers]
    if unknown:
        raise ValueError(
            f"weights names {unknown}, which this index does not combine; its retrievers are "
            f"{list(retrievers)}"
        )
    for name, weight in weights.items():
        if isinstance(weight, bool) or not isinstance(weight, Real):
            raise TypeError(f"weights[{name!r}] is {type(weight).__name__}, expected a number")
    return [float(weights.get(name, 1.0)) for name in retrievers]


def build_legs(
    documents: Sequence[Document],
    chosen: Sequence[str],
    *,
    encoder: TextEncoder | None,
    splade_encoder: SparseEncoder | None,
    embedding_cache: EmbeddingCache | None,
    num_threads: int | None,
    show_progress: bool,
) -> Legs:
    """Each retriever of ``chosen`` built over ``documents`` (``HybridIndex.build`` documents
    the arguments)."""
    bm25 = dense = splade = None
    if "bm25" in chosen:
        bm25 = BM25Index.build(documents, num_threads=num_threads, show_progress=show_progress)
    if "dense" in chosen:
        dense = DenseIndex.build(
            documents,
            encoder=encoder if encoder is not None else Encoder.load(num_threads=num_threads),
            embedding_cache=embedding_cache,
            num_threads=num_threads,
            show_progress=show_progress,
        )
    if "splade" in chosen:
        splade = SpladeIndex.build(
            documents,
            encoder=splade_encoder,
            num_threads=num_threads,
            show_progress=show_progress,
        )
    return Legs(bm25, dense, splade)
