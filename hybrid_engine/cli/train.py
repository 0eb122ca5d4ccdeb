"""``hybrid-engine train-reranker DATASET``: fine-tune a cross-encoder on a training split,
gated on held-out validation queries (needs the export extra)."""

from __future__ import annotations

import argparse
from typing import Any

from hybrid_engine.cli._options import (
    add_prepared_option,
    add_quiet_option,
    add_threads_option,
    add_training_data_options,
    training_data,
)
from hybrid_engine.training.data import NEGATIVE_MODES


def add_parser(subparsers: Any) -> None:
    """Add ``train-reranker`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser(
        "train-reranker",
        help="fine-tune a cross-encoder on a training split, gated on held-out validation "
        "queries (needs the export extra)",
    )
    p.add_argument("dataset", help="BEIR-layout folder with qrels/<split>.tsv")
    p.add_argument(
        "--out", required=True, help="Hugging Face folder to write, with training.json (new)"
    )
    add_prepared_option(p)
    p.add_argument("--no-prepare", action="store_true", help="skip the ONNX export")
    p.add_argument("--no-int8", action="store_true", help="prepare no int8 variant")
    add_training_data_options(p)
    p.add_argument("--negatives", type=int, default=3, help="negatives per positive")
    p.add_argument("--negative-mode", default="hard", choices=NEGATIVE_MODES)
    p.add_argument("--max-self-pairs", type=int, default=2000)
    p.add_argument("--max-length", type=int, default=64, help="tokens per (query, passage)")
    p.add_argument(
        "--layers",
        type=int,
        default=None,
        help="keep the base model's first N transformer layers (faster reranking; default all)",
    )
    p.add_argument(
        "--source",
        default=None,
        help="Hugging Face folder to start from (default: all-MiniLM-L6-v2; a trained "
        "cross-encoder keeps its head)",
    )
    p.add_argument(
        "--teacher",
        default=None,
        help="trained cross-encoder folder whose group scores the model also learns "
        "(distillation into a shallower --layers student)",
    )
    p.add_argument("--epochs", type=float, default=1.5)
    p.add_argument("--batch-size", type=int, default=8, help="groups per step")
    p.add_argument("--lr-body", type=float, default=5e-5)
    p.add_argument("--lr-head", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    add_threads_option(p, "PyTorch threads (default: all)")
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Train, validate and (unless ``--no-prepare``) prepare the cross-encoder."""
    from hybrid_engine.training.data import check_training_split
    from hybrid_engine.training.trainer import train_reranker  # needs the export extra

    check_training_split(args.split)  # before loading anything
    train_reranker(
        args.dataset,
        args.out,
        **training_data(args),
        negatives=args.negatives,
        negative_mode=args.negative_mode,
        max_self_pairs=args.max_self_pairs,
        max_length=args.max_length,
        layers=args.layers,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr_body=args.lr_body,
        lr_head=args.lr_head,
        seed=args.seed,
        num_threads=args.threads,
        source=args.source,
        teacher=args.teacher,
        prepare=not args.no_prepare,
        prepared_output=args.prepared,
        int8=not args.no_int8,
        show_progress=not args.quiet,
    )
    return 0
