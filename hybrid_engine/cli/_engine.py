"""How the commands build and load the hybrid engine: the bi-encoder variant, the embedding
cache, the legs' options and the reranker, in one place."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hybrid_engine.corpus import Document
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.evaluation.runner import BuildOptions, load_reranker
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.models.store import models_dir
from hybrid_engine.pipeline.engine import FORMAT, FORMAT_VERSION, HybridIndex
from hybrid_engine.storage import read_index_dir

DEFAULT_VARIANT = "int8"
"""The bi-encoder variant of ``index``, ``search`` and ``demo`` (one constant, so that an index
the CLI builds loads with the CLI's default, and the demo serves what ``index`` builds). int8 is
being measured to become the library's default; this is the one edit if it does not."""
VARIANTS = ("int8", "fp32")

LegOptions = Mapping[str, Mapping[str, Any]]
"""Build options per leg, by retriever name (``{"bm25": {"k1": 1.2}, "dense": {"m": 32}}``):
only those the user gave."""


def add_variant_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--variant {int8,fp32}`` (default ``DEFAULT_VARIANT``)."""
    parser.add_argument("--variant", choices=VARIANTS, default=DEFAULT_VARIANT, help=help_text)


def add_reranker_options(parser: argparse.ArgumentParser) -> None:
    """``--reranker NAME``, ``--rerank-variant``, ``--rerank-max-length`` (``reranker``)."""
    parser.add_argument(
        "--reranker",
        default=None,
        help="cross-encoder reranking the fused hits: a prepared folder or its name in "
        f"{models_dir()}",
    )
    parser.add_argument("--rerank-variant", choices=VARIANTS, default="int8")
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
) -> HybridIndex:
    """``HybridIndex.build`` with the ``variant`` bi-encoder (loaded only for a dense leg) and
    the default ``EmbeddingCache`` (``$HYBRID_ENGINE_CACHE``), so a corpus is embedded once.

    Raises
    ------
    ValueError
        ``leg_options`` holds any option: ``HybridIndex.build`` takes no per-leg options in
        this version, and options silently dropped would build another index than asked.
    """
    given = [f"{leg} {name}" for leg, options in leg_options.items() for name in options]
    if given:
        raise ValueError(
            f"{', '.join(given)}: HybridIndex.build takes no per-leg options in this version; "
            "leave them out to build with the legs' defaults"
        )
    encoder = (
        Encoder.load(variant=variant, num_threads=num_threads) if "dense" in retrievers else None
    )
    return HybridIndex.build(
        corpus,
        retrievers=retrievers,
        encoder=encoder,
        embedding_cache=EmbeddingCache(),
        num_threads=num_threads,
        show_progress=show_progress,
    )


def load_engine(
    path: str | os.PathLike[str],
    *,
    variant: str,
    num_threads: int | None,
    mmap: bool,
) -> HybridIndex:
    """``HybridIndex.load`` with the ``variant`` bi-encoder, loaded only when the index has a
    dense leg (a BM25-only index needs no model).

    Raises
    ------
    IndexFormatError
        ``path`` is not a hybrid index of this version (as ``HybridIndex.load``).
    ValueError
        The index was built by another bi-encoder or variant.
    """
    manifest, _ = read_index_dir(path, FORMAT, FORMAT_VERSION, mmap=True, verify=False)
    retrievers = manifest.get("retrievers")
    if not (isinstance(retrievers, list) and "dense" in retrievers):
        return HybridIndex.load(path, num_threads=num_threads, mmap=mmap)
    encoder = Encoder.load(variant=variant, num_threads=num_threads)
    try:
        return HybridIndex.load(path, encoder=encoder, num_threads=num_threads, mmap=mmap)
    except IndexFormatError:
        raise
    except ValueError as exc:  # the encoder is not the one that built the index
        raise ValueError(
            f"{exc} (the {variant} bi-encoder was loaded: give the --variant the index was "
            "built with)"
        ) from None
