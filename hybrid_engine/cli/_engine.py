"""How the commands build and load the hybrid engine: the bi-encoder variant, the embedding
cache, the legs' options and the reranker, in one place."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hybrid_engine.corpus import Document
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.evaluation.runner import BuildOptions, load_reranker
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.models.store import models_dir

DEFAULT_VARIANT = "int8"
"""The bi-encoder variant of ``index`` and ``demo``: the library's default (never significantly
worse than fp32 on the five collections, docs/quantization.md). ``search`` loads what the index
recorded."""
VARIANTS = ("int8", "fp32")

LegOptions = Mapping[str, Mapping[str, Any]]
"""Build options per leg, by retriever name (``{"bm25": {"k1": 1.2}, "dense": {"m": 32}}``):
only those the user gave."""


def add_variant_option(
    parser: argparse.ArgumentParser, help_text: str, default: str | None = DEFAULT_VARIANT
) -> None:
    """``--variant {int8,fp32}``."""
    parser.add_argument("--variant", choices=VARIANTS, default=default, help=help_text)


def add_reranker_options(parser: argparse.ArgumentParser) -> None:
    """``--reranker NAME``, ``--rerank-variant``, ``--rerank-max-length`` (``reranker``)."""
    parser.add_argument(
        "--reranker",
        default=None,
        help="cross-encoder reranking the fused hits: a prepared folder or its name in "
        f"{models_dir()}",
    )
    parser.add_argument(
        "--rerank-variant",
        choices=VARIANTS,
        default=None,
        help="cross-encoder variant (default: the one its validation gate scored)",
    )
    parser.add_argument(
        "--rerank-max-length",
        type=int,
        default=None,
        help="tokens per (query, passage) pair (default: the model's)",
    )


def reranker(args: argparse.Namespace) -> CrossEncoder:
    """The cross-encoder the options of ``add_reranker_options`` name (``load_reranker``)."""
    return load_reranker(
        BuildOptions(
            num_threads=args.threads,
            reranker=args.reranker,
            rerank_variant=args.rerank_variant,
            rerank_max_length=args.rerank_max_length,
        )
    )


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


def add_degraded_option(parser: argparse.ArgumentParser) -> None:
    """``--allow-degraded`` (``load_engine``)."""
    parser.add_argument(
        "--allow-degraded",
        action="store_true",
        help="when a leg's prepared model is missing or damaged, load the other legs (with a "
        "warning) instead of failing; such an engine cannot change the index",
    )


MMAP_CHOICES: dict[str, bool | str] = {"all": True, "cold": "cold"}
"""``--mmap`` values and the ``HybridIndex.load(mmap=...)`` each gives."""


def add_mmap_option(parser: argparse.ArgumentParser) -> None:
    """``--mmap [all|cold]``: map every array (``--mmap``, ``--mmap all``) or only what
    searches read rarely (``--mmap cold``); read everything when absent."""
    parser.add_argument(
        "--mmap",
        nargs="?",
        const="all",
        choices=tuple(MMAP_CHOICES),
        default=None,
        help="memory-map the index: all of it (the default of --mmap), or only what searches "
        "read rarely: quantized vectors, stored texts (cold); absent: read it all",
    )


def mmap_mode(args: argparse.Namespace) -> bool | str:
    """``HybridIndex.load``'s ``mmap`` for ``--mmap``."""
    return False if args.mmap is None else MMAP_CHOICES[args.mmap]


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
