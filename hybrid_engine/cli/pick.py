"""``hybrid-engine pick DATASET``: recommend a retrieval stack under a p95 latency budget,
measured on the user's judged queries, or by rule from corpus statistics without them."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hybrid_engine.cli._options import (
    add_quiet_option,
    add_report_files,
    add_reranker_options,
    add_threads_option,
)
from hybrid_engine.cli._output import print_table, write_json
from hybrid_engine.evaluation.pick_report import PickReport
from hybrid_engine.evaluation.picker import CANDIDATES, pick
from hybrid_engine.evaluation.plot import plot_quality_latency


def add_parser(subparsers: Any) -> None:
    """Add ``pick`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser(
        "pick", help="recommend a retrieval stack for a collection under a latency budget"
    )
    p.add_argument(
        "dataset",
        help="BEIR-layout folder (corpus.jsonl, queries.jsonl, qrels/<split>.tsv); without "
        "qrels for the split (or a corpus file), the stack is recommended by rule",
    )
    p.add_argument(
        "--budget-ms",
        type=float,
        default=100.0,
        help="p95 milliseconds per query allowed (default: 100)",
    )
    p.add_argument(
        "--split",
        default="train",
        help="judged queries to measure on: train or dev, never test (default: train)",
    )
    p.add_argument(
        "--candidates",
        default=None,
        help=f"comma-separated kinds to try, from {list(CANDIDATES)} (default: all; rerank "
        "only with --reranker)",
    )
    add_reranker_options(
        p,
        "also try reranking the hybrid's top 30 with this cross-encoder: a prepared folder or "
        "its name in {models}",
        variant_default="int8",
        variant_help=None,
        max_length_help="tokens per (query, passage) pair (default: the validated or the model's)",
    )
    p.add_argument(
        "--rules",
        action="store_true",
        help="recommend by rule from corpus statistics even where judged queries exist",
    )
    add_threads_option(p, None)
    add_report_files(
        p, "also write the report as JSON", "also write a PNG of nDCG@10 against p95, budget drawn"
    )
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Pick a stack; print the report, write the JSON and plot if asked."""
    candidates = None if args.candidates is None else args.candidates.split(",")
    report = pick(
        args.dataset,
        budget_ms=args.budget_ms,
        split=args.split,
        candidates=candidates,
        reranker=args.reranker,
        rerank_variant=args.rerank_variant,
        rerank_max_length=args.rerank_max_length,
        rules=args.rules,
        num_threads=args.threads,
        show_progress=not args.quiet,
    )
    print_report(report)
    if args.json:
        write_json(args.json, report.to_dict())
    if args.plot:
        if not report.candidates:
            print("no plot: a rule-based recommendation measures nothing")
        else:
            rows = {c.name: c.row() for c in report.candidates}
            title = f"{report.dataset} ({report.split}): nDCG@10 vs p95 latency"
            plot_quality_latency(
                rows, args.plot, title=title, budget_ms=report.budget_ms, chosen=report.name
            )
            print(f"wrote {args.plot}")
    return 0


def print_report(report: PickReport) -> None:
    """The candidates' table (when measured), the recommendation and its basis, the notes,
    the stack as JSON and the eval command that reproduces the figure."""
    if report.statistics is not None:
        stats = report.statistics
        print(
            f"{report.dataset}: {stats.n_documents} documents, {stats.mean_tokens:.1f} mean / "
            f"{stats.median_tokens:.0f} median tokens, {stats.identifier_share:.2%} "
            "identifier-like tokens"
        )
    if report.candidates:
        print(f"{report.dataset} ({report.split}: {report.n_queries} judged queries)")
        print_table({c.name: c.row() for c in report.candidates})
        print()
    print(f"basis: {report.basis}")
    print(report.headline())
    for note in report.notes:
        print(f"  note: {note}")
    print(f"stack: {json.dumps(report.stack.to_dict())}")
    if report.eval_command is not None:
        print(f"reproduce: {report.eval_command}")
