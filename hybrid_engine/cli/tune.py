"""``hybrid-engine tune DATASET``: grid the BM25/dense fusion weights on a training split."""

from __future__ import annotations

import argparse
from typing import Any

from hybrid_engine.cli._options import add_quiet_option, add_report_files
from hybrid_engine.cli._output import write_json
from hybrid_engine.evaluation import load_beir
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD, METHODS


def add_parser(subparsers: Any) -> None:
    """Add ``tune`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser(
        "tune", help="tune the BM25/dense fusion weights on a training split (never test)"
    )
    p.add_argument("dataset", help="BEIR-layout folder with qrels/<split>.tsv")
    p.add_argument("--split", default="train", help="qrels split to tune on (default: train)")
    p.add_argument("--method", default=DEFAULT_METHOD, choices=METHODS)
    p.add_argument("--steps", type=int, default=11, help="grid points of the BM25 weight")
    add_report_files(p, "also write the grid as JSON")
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Grid the weights; print the grid and the best, write the JSON if asked."""
    from hybrid_engine.evaluation.tuning import check_tuning_split, format_grid, tune_weights

    check_tuning_split(args.split)  # before loading anything
    dataset = load_beir(args.dataset, args.split)
    result = tune_weights(
        dataset, method=args.method, steps=args.steps, show_progress=not args.quiet
    )
    print(f"{dataset.name} ({args.split}: {len(dataset.queries)} queries), fusion {args.method}")
    print(format_grid(result))
    print(f"best weights (bm25, dense) = {result.weights}: nDCG@10 {result.score:.4f}")
    if args.json:
        figures = {
            "method": args.method,
            "split": args.split,
            "weights": list(result.weights),
            "ndcg@10": result.score,
            "grid": [{"weights": list(w), "ndcg@10": s} for w, s in result.grid],
        }
        write_json(args.json, figures)
    return 0
