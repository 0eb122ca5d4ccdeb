"""``hybrid-engine eval DATASET``: score retrievers on a BEIR-layout dataset (the ablation)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from hybrid_engine.cli._options import (
    add_quiet_option,
    add_report_files,
    add_reranker_options,
    add_threads_option,
    reranker_options,
)
from hybrid_engine.cli._output import print_eval_tables, write_json
from hybrid_engine.evaluation import load_beir, sample_queries
from hybrid_engine.evaluation.plot import plot_quality_latency
from hybrid_engine.evaluation.runner import (
    DEFAULT_GENERATOR,
    GENERATIVE,
    RETRIEVERS,
    BuildOptions,
    evaluate_retriever,
    load_generator,
    load_reranker,
    parse_retrievers,
)
from hybrid_engine.models.store import models_dir
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD, METHODS


def add_parser(subparsers: Any) -> None:
    """Add ``eval`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser("eval", help="score retrievers on a BEIR-layout dataset")
    p.add_argument("dataset", help="folder with corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    p.add_argument(
        "--retriever",
        default="bm25",
        help=f"comma-separated, from {sorted(RETRIEVERS)}; hybrid fuses bm25 and dense, "
        "hybrid3 bm25, dense and splade, rerank reranks hybrid's top 30 with --reranker "
        "(default: bm25)",
    )
    p.add_argument(
        "--fusion",
        choices=METHODS,
        default=DEFAULT_METHOD,
        help=f"fusion method of hybrid, hybrid3 and rerank (default: {DEFAULT_METHOD})",
    )
    p.add_argument(
        "--model",
        default=None,
        help="bi-encoder of the configurations with a dense leg: a prepared folder or its name "
        f"in {models_dir()} (`models prepare-encoder`; default: the shipped all-MiniLM-L6-v2)",
    )
    p.add_argument("--split", default="test")
    add_threads_option(p, None)
    add_report_files(
        p, "also write the figures as JSON", "also write a PNG of nDCG@10 against p95 latency"
    )
    add_reranker_options(
        p,
        "the rerank configuration's cross-encoder: a prepared folder or its name in {models}",
        variant_default="int8",
        variant_help=None,
    )
    p.add_argument(
        "--max-queries",
        type=int,
        default=None,
        metavar="N",
        help="score a seeded sample of N queries (default: all); the strategies run a "
        "generator per query (~1-2 s each on 2 cores)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of --max-queries' sample")
    p.add_argument(
        "--generator",
        default=DEFAULT_GENERATOR,
        help="local generator of hyde, decompose, multi-hop and fused-strategies "
        f"(generation.load_generator; default {DEFAULT_GENERATOR})",
    )
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build and score each retriever; print the tables, write the JSON and plot if asked."""
    names = parse_retrievers(args.retriever)  # before loading: a typo fails at once
    options = BuildOptions(
        num_threads=args.threads,
        show_progress=not args.quiet,
        **reranker_options(args),
        generator_name=args.generator,
        fusion=args.fusion,
        model=args.model,
    )
    if "rerank" in names:
        load_reranker(options)  # a missing or wrong model fails before any indexing
    if any(name in GENERATIVE for name in names):
        options = replace(options, generator=load_generator(options))  # fails before indexing
    dataset = sample_queries(load_beir(args.dataset, args.split), args.max_queries, args.seed)
    rows = {name: evaluate_retriever(dataset, name, options=options).to_dict() for name in names}
    print(
        f"{dataset.name} ({args.split}: {len(dataset.queries)} queries, "
        f"{len(dataset.corpus)} documents)"
    )
    print_eval_tables(rows)
    if args.json:
        write_json(args.json, rows)
    if args.plot:
        plot_quality_latency(
            rows, args.plot, title=f"{dataset.name} ({args.split}): quality vs p95 latency"
        )
        print(f"wrote {args.plot}")
    return 0
