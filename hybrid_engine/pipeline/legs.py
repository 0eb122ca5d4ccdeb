"""The legs of a ``HybridIndex``: which retrievers it combines, each one built over the same
documents with its options (or prebuilt legs checked to hold the same documents), and the
fusion weights given by leg name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any, NamedTuple

import numpy as np

from hybrid_engine.corpus import DocIds
from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.lexical.index import BM25Index
from hybrid_engine.sparse.index import SpladeIndex

RETRIEVERS = ("bm25", "dense", "splade")
"""Retrievers a ``HybridIndex`` can combine, in the order of its legs."""
DEFAULT_RETRIEVERS = ("bm25", "dense")
"""The retrievers of ``HybridIndex.build`` by default."""
BM25_OPTIONS = ("k1", "b", "method", "delta", "analyzer", "positions", "title_weight")
"""Keys of ``HybridIndex.build(bm25_options=...)``: these parameters of ``BM25Index.build``,
and ``title_weight`` (``live.config.EngineConfig.title_weight``)."""
DENSE_OPTIONS = (
    "metric",
    "m",
    "ef_construction",
    "ef_search",
    "exact_threshold",
    "quantization",
    "oversample",
    "batch_size",
)
"""Keys of ``HybridIndex.build(dense_options=...)``: these parameters of ``DenseIndex.build``."""
DEFAULT_DENSE_OPTIONS = {"quantization": "binary"}
"""What a new engine's dense leg is built with unless ``dense_options`` says otherwise: its
graph walks on binary codes (52 bytes a 384-d vector) with a list of 448, every candidate
rescored with the float32 vectors (``dense.params``' defaults for binary codes).

Measured (docs/memory.md): on the five shared collections
(``benchmarks/reports/quantization_quality.py``) no nDCG@10 difference from float32, dense or
hybrid, with a paired p below 0.05, and recall@10 against exact float32 search 0.998 or more; on the
scale documents recall@10 0.9943 at 254k and 0.9857 at 1M (int8 codes: 0.9892 and 0.9825), and the
default engine over the 253,928 documents takes 1,918 bytes a document on disk and 410 resident with
``mmap="cold"`` (int8 codes: 2,250 and 741). An index built before a default keeps its own
quantization in its new segments (float32 before int8 codes, int8 before binary)."""
_LEG_TYPES = {"bm25": BM25Index, "dense": DenseIndex, "splade": SpladeIndex}


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


def check_options(
    name: str,
    options: Mapping[str, Any] | None,
    valid: Sequence[str],
    leg: str,
    chosen: Sequence[str],
) -> dict[str, Any]:
    """``options`` (``name``, for leg ``leg``) as a dict whose keys are among ``valid``.

    Raises
    ------
    TypeError
        ``options`` is not a mapping, or has a key outside ``valid`` (the message lists them).
    ValueError
        Options (not an empty dict) for a leg that is not among ``chosen``.
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise TypeError(
            f"{name} must be a dict of option name to value (from {list(valid)}), got "
            f"{type(options).__name__}"
        )
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise TypeError(f"{name} has unknown option(s) {unknown}; valid: {list(valid)}")
    if options and leg not in chosen:
        raise ValueError(
            f"{name} given, but the retrievers are {list(chosen)}: add {leg!r} to retrievers "
            "or drop the options"
        )
    return dict(options)


def check_legs(legs: Legs, doc_ids: DocIds) -> None:
    """Raise unless ``legs`` (at least one) are indexes of the documents whose ids are
    ``doc_ids``, in the same order, and the dense leg can encode text queries.

    Raises
    ------
    TypeError
        A leg of the wrong class.
    ValueError
        No leg; a leg of another number of documents, another id mode (ids or positions) or
        other ids (the message names the first that differs); a dense leg without encoder.
    """
    if all(leg is None for leg in legs):
        raise ValueError(
            "give at least one leg: bm25=BM25Index, dense=DenseIndex or splade=SpladeIndex"
        )
    for name, leg in zip(RETRIEVERS, legs, strict=True):
        if leg is None:
            continue
        if not isinstance(leg, _LEG_TYPES[name]):
            raise TypeError(
                f"{name} must be a {_LEG_TYPES[name].__name__}, got {type(leg).__name__}"
            )
        _check_same_ids(name, leg.doc_ids, doc_ids)
    if legs.dense is not None and legs.dense.encoder is None:
        raise ValueError(
            "the dense leg has no text encoder, so it cannot search text queries; build it from "
            "texts, or pass encoder= to DenseIndex.from_vectors or DenseIndex.load"
        )


def _check_same_ids(name: str, ids: DocIds, corpus: DocIds) -> None:
    if len(ids) != len(corpus):
        raise ValueError(
            f"the {name} leg holds {len(ids)} documents, the corpus {len(corpus)}: build every "
            "leg from the same documents"
        )
    if ids.explicit != corpus.explicit:
        have = "have ids" if ids.explicit else "have no ids (positions)"
        other = "have them" if corpus.explicit else "do not"
        raise ValueError(
            f"the {name} leg's documents {have}, the corpus's {other}: build every leg from "
            "the same documents"
        )
    arrays, expected = ids.arrays(), corpus.arrays()
    if all(np.array_equal(arrays[key], expected[key]) for key in expected):
        return
    first = next(i for i in range(len(ids)) if ids[i] != corpus[i])
    raise ValueError(
        f"the {name} leg's document {first} has id {ids[first]!r}, the corpus's "
        f"{corpus[first]!r}: the legs must hold the corpus's documents in its order"
    )
