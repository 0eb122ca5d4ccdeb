"""How the commands build and load the hybrid engine: the bi-encoder variant, the embedding
cache, the legs' options and the reranker, in one place."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hybrid_engine.cli._options import mmap_mode, reranker_options
from hybrid_engine.corpus import Document
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.evaluation.runner import BuildOptions, load_reranker
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.cross_encoder import CrossEncoder

LegOptions = Mapping[str, Mapping[str, Any]]
"""Build options per leg, by retriever name (``{"bm25": {"k1": 1.2}, "dense": {"m": 32}}``):
only those the user gave."""


def reranker(args: argparse.Namespace) -> CrossEncoder:
    """The cross-encoder the options of ``_options.add_reranker_options`` name
    (``load_reranker``)."""
    return load_reranker(BuildOptions(num_threads=args.threads, **reranker_options(args)))


def build_engine(
    corpus: Iterable[Document],
    *,
    retrievers: Sequence[str],
    variant: str,
    leg_options: LegOptions,
    num_threads: int | None,
    show_progress: bool,
    model: str | os.PathLike[str] | None = None,
) -> HybridIndex:
    """``HybridIndex.build`` with the ``variant`` of bi-encoder ``model`` (a prepared folder
    or its name in the models folder; the default model when None; loaded only for a dense
    leg) and the default ``EmbeddingCache`` (``$HYBRID_ENGINE_CACHE``), so a corpus is
    embedded once.

    Raises
    ------
    ValueError, TypeError
        Options for a leg that is not built, or what ``HybridIndex.build`` raises.
    """
    encoder = (
        Encoder.load(model, variant=variant, num_threads=num_threads)
        if "dense" in retrievers
        else None
    )
    return HybridIndex.build(
        corpus,
        retrievers=retrievers,
        encoder=encoder,
        bm25_options=leg_options.get("bm25"),
        dense_options=leg_options.get("dense"),
        embedding_cache=EmbeddingCache(),
        num_threads=num_threads,
        show_progress=show_progress,
    )


def load_engine(
    path: str | os.PathLike[str],
    *,
    variant: str | None,
    num_threads: int | None,
    mmap: bool | str,
    allow_degraded: bool = False,
) -> HybridIndex:
    """``HybridIndex.load``: with the models the index recorded, or the ``variant`` bi-encoder
    when given; ``allow_degraded`` as in ``HybridIndex.load``.

    Raises
    ------
    IndexFormatError
        ``path`` is not a hybrid index of this version (as ``HybridIndex.load``).
    ValueError
        ``variant`` is not the one the index was built with.
    """
    if variant is None:
        return HybridIndex.load(
            path, num_threads=num_threads, mmap=mmap, allow_degraded=allow_degraded
        )
    encoder = Encoder.load(variant=variant, num_threads=num_threads)
    try:
        return HybridIndex.load(
            path, encoder=encoder, num_threads=num_threads, mmap=mmap, allow_degraded=allow_degraded
        )
    except IndexFormatError:
        raise
    except ValueError as exc:  # the encoder is not the one that built the index
        raise ValueError(
            f"{exc} (the {variant} bi-encoder was loaded: leave --variant out to use the one "
            "the index recorded)"
        ) from None


def load_searched(args: argparse.Namespace) -> HybridIndex:
    """``load_engine`` of ``args.index`` with the loading options ``search`` and ``serve``
    share: ``--variant``, ``--threads``, ``--mmap`` and ``--allow-degraded``."""
    return load_engine(
        args.index,
        variant=args.variant,
        num_threads=args.threads,
        mmap=mmap_mode(args),
        allow_degraded=args.allow_degraded,
    )
