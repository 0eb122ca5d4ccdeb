"""``hybrid-engine models prepare | prepare-encoder | prepare-reranker | info``: prepare and
inspect the ONNX models."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hybrid_engine.cli._options import add_quiet_option, progress_log
from hybrid_engine.models.store import (
    BI_ENCODER,
    BI_ENCODER_POOLINGS,
    SPLADE,
    SPLADE_MODEL,
    ModelInfo,
    default_model_path,
    models_dir,
    read_model,
)


def add_parser(subparsers: Any) -> None:
    """Add ``models`` and its own subcommands to the ``hybrid-engine`` subparsers."""
    parser = subparsers.add_parser("models", help="prepare and inspect the ONNX models")
    parser.set_defaults(func=run)
    models = parser.add_subparsers(dest="models_command", required=True)
    p = models.add_parser(
        "prepare",
        help="export the bi-encoder and the SPLADE model shipped in PyPI packages to ONNX "
        "(needs the export extra)",
    )
    p.add_argument(
        "--output", default=None, help=f"bi-encoder folder (default: {default_model_path()})"
    )
    p.add_argument(
        "--splade-output",
        default=None,
        help=f"SPLADE model folder (default: {default_model_path(SPLADE_MODEL)})",
    )
    _add_preparation_flags(p)
    p = models.add_parser(
        "prepare-encoder",
        help="export a local bi-encoder folder (BERT, DistilBERT, RoBERTa, XLM-RoBERTa, MPNet) "
        "to ONNX, checked against sentence-transformers (needs the export extra)",
    )
    p.add_argument(
        "source", help="local sentence-transformers or Hugging Face folder of the encoder"
    )
    _add_name_option(p)
    p.add_argument(
        "--pooling",
        choices=BI_ENCODER_POOLINGS,
        default=None,
        help="pooling of the token states (default: the folder's 1_Pooling; required for a "
        "plain Hugging Face folder)",
    )
    normalize = p.add_mutually_exclusive_group()
    normalize.add_argument(
        "--normalize",
        dest="normalize",
        action="store_const",
        const=True,
        default=None,
        help="L2-normalise the vectors (default: as the folder says; yes without modules.json)",
    )
    normalize.add_argument("--no-normalize", dest="normalize", action="store_const", const=False)
    p.add_argument(
        "--max-length",
        type=int,
        default=None,
        help="tokens kept per text, prefix included (default: the folder's max_seq_length)",
    )
    p.add_argument(
        "--query-prefix",
        default=None,
        help="prepended to every query, e.g. 'query: ' for e5 (default: the folder's "
        "config_sentence_transformers.json prompts['query'], else none)",
    )
    p.add_argument(
        "--document-prefix",
        default=None,
        help="prepended to every document, e.g. 'passage: ' for e5 (default: the folder's "
        "prompts['document'|'passage'|'corpus'], else none)",
    )
    _add_preparation_flags(p)
    p = models.add_parser(
        "prepare-reranker",
        help="export a local cross-encoder folder (BERT, DistilBERT, RoBERTa, XLM-RoBERTa, MPNet) "
        "to ONNX (needs the export extra)",
    )
    p.add_argument(
        "source",
        help="local Hugging Face folder of a ...ForSequenceClassification with one label",
    )
    _add_name_option(p)
    _add_preparation_flags(p)
    p = models.add_parser("info", help="print prepared models' manifests (files checked)")
    p.add_argument(
        "path", nargs="?", default=None, help="model folder (default: both default models)"
    )


def run(args: argparse.Namespace) -> int:
    """Run the ``models`` subcommand that ``args.models_command`` names."""
    subcommands = {
        "prepare": _prepare,
        "prepare-encoder": _prepare_encoder,
        "prepare-reranker": _prepare_reranker,
        "info": _info,
    }
    return subcommands[args.models_command](args)


def _prepare(args: argparse.Namespace) -> int:
    # Both need the export extra, so they are imported only here.
    from hybrid_engine.models.export.bi_encoder import prepare_model
    from hybrid_engine.models.export.splade import prepare_splade

    log = progress_log(args)
    prepare_model(
        args.output,
        int8=not args.no_int8,
        force=args.force,
        log=log,
        allow_pickle_weights=args.allow_pickle_weights,
    )
    prepare_splade(args.splade_output, int8=not args.no_int8, force=args.force, log=log)
    return 0


def _prepare_encoder(args: argparse.Namespace) -> int:
    # needs the export extra, only here
    from hybrid_engine.models.export.bi_encoder import prepare_encoder

    log = progress_log(args)
    path = prepare_encoder(
        args.source,
        name=args.name,
        pooling=args.pooling,
        normalize=args.normalize,
        max_length=args.max_length,
        query_prefix=args.query_prefix,
        document_prefix=args.document_prefix,
        int8=not args.no_int8,
        force=args.force,
        log=log,
        allow_pickle_weights=args.allow_pickle_weights,
    )
    log(f"prepared {path}; index with it: hybrid-engine index CORPUS INDEX --model {path.name}")
    return 0


def _prepare_reranker(args: argparse.Namespace) -> int:
    # needs the export extra, only here
    from hybrid_engine.models.export.cross_encoder import prepare_cross_encoder

    log = progress_log(args)
    prepare_cross_encoder(
        args.source,
        name=args.name,
        int8=not args.no_int8,
        force=args.force,
        log=log,
        allow_pickle_weights=args.allow_pickle_weights,
    )
    return 0


def _print_model(info: ModelInfo) -> None:
    manifest = {key: value for key, value in info.manifest.items() if key != "files"}
    manifest["files"] = {
        name: entry["bytes"] for name, entry in sorted(info.manifest["files"].items())
    }
    print(f"{info.path}")
    print(json.dumps(manifest, indent=2, sort_keys=True))


def _info(args: argparse.Namespace) -> int:
    if args.path is not None:
        _print_model(read_model(args.path))
        return 0
    for kind in (BI_ENCODER, SPLADE):
        _print_model(read_model(kind=kind))
    return 0


def _add_name_option(parser: argparse.ArgumentParser) -> None:
    """``--name`` of the commands preparing a local source."""
    parser.add_argument(
        "--name",
        default=None,
        help=f"model name, the folder under {models_dir()} (default: the source folder's name)",
    )


def _add_preparation_flags(parser: argparse.ArgumentParser) -> None:
    """``--no-int8``, ``--force``, ``--quiet`` and ``--allow-pickle-weights`` of every
    preparing command."""
    parser.add_argument("--no-int8", action="store_true", help="skip the int8 variant")
    parser.add_argument(
        "--allow-pickle-weights",
        action="store_true",
        help="read a source's pytorch_model.bin when it has no model.safetensors (unpickling "
        "can run code: only for a file you trust)",
    )
    parser.add_argument("--force", action="store_true", help="prepare again if already prepared")
    add_quiet_option(parser, "print nothing but errors")
