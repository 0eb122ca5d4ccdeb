"""``hybrid-engine train-encoder DATASET --out FOLDER``: fine-tune the bi-encoder on a training
split, prepare it to ONNX, and gate it on held-out validation queries (needs the export
extra)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hybrid_engine.cli._options import (
    add_prepared_option,
    add_quiet_option,
    add_threads_option,
    add_training_data_options,
    progress_log,
    training_data,
)


def add_parser(subparsers: Any) -> None:
    """Add ``train-encoder`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser(
        "train-encoder",
        help="fine-tune a prepared bi-encoder (default all-MiniLM-L6-v2) on a training split, "
        "prepare it, gated on held-out validation queries (needs the export extra)",
    )
    p.add_argument("dataset", help="BEIR-layout folder with qrels/<split>.tsv")
    p.add_argument(
        "--base",
        default=None,
        help="prepared bi-encoder to fine-tune and to beat: a folder or its name in the models "
        "folder (default: all-MiniLM-L6-v2); the new model keeps its pooling and prefixes",
    )
    p.add_argument(
        "--source",
        default=None,
        help="sentence-transformers folder to start from (default: the one --base was "
        "prepared from)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="sentence-transformers folder to write, with training.json (new); its name is "
        "the model's name",
    )
    add_prepared_option(p)
    p.add_argument("--no-int8", action="store_true", help="prepare no int8 variant")
    p.add_argument(
        "--force",
        action="store_true",
        help="prepare the model even if the validation gate refuses it (loading it warns)",
    )
    add_training_data_options(p)
    p.add_argument("--max-self-pairs", type=int, default=2000)
    p.add_argument("--max-seq-length", type=int, default=256, help="tokens per query or passage")
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--batch-size", type=int, default=16, help="pairs per step")
    p.add_argument("--lr", type=float, default=2e-5)
    p.add_argument("--warmup", type=float, default=0.1, help="share of steps warming up")
    p.add_argument("--min-gain", type=float, default=0.0, help="mean nDCG@10 gain to beat")
    p.add_argument("--seed", type=int, default=0)
    add_threads_option(p)
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Check the arguments, then train, prepare and gate the bi-encoder."""
    from hybrid_engine.training.data import check_training_split

    check_training_split(args.split, "a bi-encoder")  # before loading anything
    if Path(args.out).exists():
        raise FileExistsError(f"{args.out} exists; choose a new --out folder or remove it")
    from hybrid_engine.training.encoder_loop import EncoderSettings, require_encoder_training

    require_encoder_training("sentence_transformers")  # the extra's message, before any work
    from hybrid_engine.training.encoder_trainer import train_encoder

    settings = EncoderSettings(
        max_seq_length=args.max_seq_length,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        warmup=args.warmup,
        seed=args.seed,
    )
    prepared = train_encoder(
        args.dataset,
        args.out,
        base=args.base,
        source=args.source,
        **training_data(args),
        max_self_pairs=args.max_self_pairs,
        settings=settings,
        min_gain=args.min_gain,
        num_threads=args.threads,
        prepared_output=args.prepared,
        int8=not args.no_int8,
        force=args.force,
        show_progress=not args.quiet,
        log=progress_log(args),
    )
    print(f"prepared {prepared}: use it with `hybrid-engine index CORPUS OUT --model {prepared}`")
    return 0
