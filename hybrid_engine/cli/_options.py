"""The options several commands share, declared in one place: each ``add_*`` adds one named
group of them to a command's parser (flags, types, defaults and help texts as that group's
commands have them), and each reader returns the values of a group that commands pass on
alike."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypedDict

from hybrid_engine.models.store import models_dir

DEFAULT_VARIANT = "int8"
"""The bi-encoder variant of ``index`` and ``demo``: the library's default (never significantly
worse than fp32 on the five collections, docs/quantization.md). ``search`` loads what the index
recorded."""
VARIANTS = ("int8", "fp32")
THREADS_HELP = "threads (default: all cores)"
PROGRESS_HELP = "no progress bars"
RERANKER_HELP = "cross-encoder reranking the fused hits: a prepared folder or its name in {models}"
"""``--reranker``'s help of the commands that search (``{models}``: the models folder)."""
RERANK_VARIANT_HELP = "cross-encoder variant (default: the one its validation gate scored)"
RERANK_MAX_LENGTH_HELP = "tokens per (query, passage) pair (default: the model's)"
MMAP_CHOICES: dict[str, bool | str] = {"all": True, "cold": "cold"}
"""``--mmap`` values and the ``HybridIndex.load(mmap=...)`` each gives."""


def add_threads_option(
    parser: argparse.ArgumentParser, help_text: str | None = THREADS_HELP
) -> None:
    """``--threads N`` (default None: all cores)."""
    parser.add_argument("--threads", type=int, default=None, help=help_text)


def add_quiet_option(parser: argparse.ArgumentParser, help_text: str = PROGRESS_HELP) -> None:
    """``--quiet``."""
    parser.add_argument("--quiet", action="store_true", help=help_text)


def progress_log(args: argparse.Namespace) -> Callable[[str], None]:
    """Where the progress lines go under ``--quiet``: ``print``, or nowhere."""
    return (lambda message: None) if args.quiet else print


def add_index_arguments(parser: argparse.ArgumentParser) -> None:
    """``INDEX``, ``--threads`` and ``--ray-address`` (``add`` and ``delete``)."""
    parser.add_argument(
        "index", help="live or sharded index directory (`hybrid-engine index` or save)"
    )
    add_threads_option(parser)
    add_ray_option(parser)


def add_ray_option(parser: argparse.ArgumentParser) -> None:
    """``--ray-address``."""
    parser.add_argument(
        "--ray-address",
        default=None,
        metavar="HOST:PORT",
        help="with a sharded index: the running Ray cluster to run its shards on (`ray start "
        "--head` printed it; its RAY_AUTH_TOKEN in the environment); every node must see the "
        "index directory (default: a local Ray started for this command)",
    )


def add_skip_empty_option(parser: argparse.ArgumentParser) -> None:
    """``--skip-empty``."""
    parser.add_argument(
        "--skip-empty",
        action="store_true",
        help="leave out the documents with neither title nor text, and say how many (default: "
        "such a document is an error naming its line and _id)",
    )


def add_variant_option(
    parser: argparse.ArgumentParser, help_text: str, default: str | None = DEFAULT_VARIANT
) -> None:
    """``--variant {int8,fp32}``."""
    parser.add_argument("--variant", choices=VARIANTS, default=default, help=help_text)


def add_reranker_options(
    parser: argparse.ArgumentParser,
    reranker_help: str = RERANKER_HELP,
    *,
    variant_default: str | None = None,
    variant_help: str | None = RERANK_VARIANT_HELP,
    max_length_help: str = RERANK_MAX_LENGTH_HELP,
) -> None:
    """``--reranker NAME``, ``--rerank-variant``, ``--rerank-max-length`` (``reranker_options``).

    The help texts are those of the commands that search; ``eval`` and ``pick`` give their own
    (``{models}`` in ``reranker_help``: the models folder) and default to the int8 variant.
    """
    parser.add_argument("--reranker", default=None, help=reranker_help.format(models=models_dir()))
    parser.add_argument(
        "--rerank-variant", choices=VARIANTS, default=variant_default, help=variant_help
    )
    parser.add_argument("--rerank-max-length", type=int, default=None, help=max_length_help)


class RerankerOptions(TypedDict):
    """The keywords of ``BuildOptions`` that name the reranker."""

    reranker: str | None
    rerank_variant: str | None
    rerank_max_length: int | None


def reranker_options(args: argparse.Namespace) -> RerankerOptions:
    """The options of ``add_reranker_options``, as ``BuildOptions``' keywords."""
    return RerankerOptions(
        reranker=args.reranker,
        rerank_variant=args.rerank_variant,
        rerank_max_length=args.rerank_max_length,
    )


def add_loaded_models_options(parser: argparse.ArgumentParser) -> None:
    """The models ``search`` and ``serve`` load with a saved index: ``add_reranker_options``
    and ``--variant`` (default: the bi-encoder the index recorded)."""
    add_reranker_options(parser)
    add_variant_option(
        parser, "bi-encoder variant to load (default: the one the index recorded)", default=None
    )


def add_loading_options(parser: argparse.ArgumentParser) -> None:
    """How ``search`` and ``serve`` load a saved index (``_engine.load_searched``):
    ``--mmap [all|cold]``, mapping every array (``--mmap``, ``--mmap all``) or only what
    searches read rarely (``--mmap cold``; ``mmap_mode``), and ``--allow-degraded``."""
    parser.add_argument(
        "--mmap",
        nargs="?",
        const="all",
        choices=tuple(MMAP_CHOICES),
        default=None,
        help="memory-map the index: all of it (the default of --mmap), or only what searches "
        "read rarely: quantized vectors, stored texts (cold); absent: read it all",
    )
    parser.add_argument(
        "--allow-degraded",
        action="store_true",
        help="when a leg's prepared model is missing or damaged, load the other legs (with a "
        "warning) instead of failing; such an engine cannot change the index",
    )


def mmap_mode(args: argparse.Namespace) -> bool | str:
    """``HybridIndex.load``'s ``mmap`` for ``--mmap``."""
    return False if args.mmap is None else MMAP_CHOICES[args.mmap]


def add_report_files(
    parser: argparse.ArgumentParser, json_help: str, plot_help: str | None = None
) -> None:
    """``--json FILE`` and, with ``plot_help``, ``--plot FILE`` (``_output.write_json``)."""
    parser.add_argument("--json", metavar="FILE", help=json_help)
    if plot_help is not None:
        parser.add_argument("--plot", metavar="FILE", help=plot_help)


def add_prepared_option(parser: argparse.ArgumentParser) -> None:
    """``--prepared FOLDER`` of the training commands."""
    parser.add_argument(
        "--prepared",
        default=None,
        help="prepared ONNX folder (default: the models folder / the --out folder's name)",
    )


def add_training_data_options(parser: argparse.ArgumentParser) -> None:
    """``--split``, ``--supervision`` and ``--validation-fraction`` of the training commands
    (``training_data``)."""
    parser.add_argument("--split", default="train", help="qrels split to train on (never test)")
    parser.add_argument(
        "--supervision", default="qrels", help="comma-separated: qrels, self (default: qrels)"
    )
    parser.add_argument("--validation-fraction", type=float, default=0.2)


class TrainingData(TypedDict):
    """The keywords of ``train_reranker`` and ``train_encoder`` that choose their examples."""

    split: str
    supervision: list[str]
    validation_fraction: float


def training_data(args: argparse.Namespace) -> TrainingData:
    """The options of ``add_training_data_options``, as the trainers' keywords
    (``supervision``: the list of names)."""
    return TrainingData(
        split=args.split,
        supervision=[s.strip() for s in args.supervision.split(",") if s.strip()],
        validation_fraction=args.validation_fraction,
    )
