"""``hybrid-engine demo``: the hybrid engine over the embedded collection (SciFact): the fused
hits of a few queries with each stage's milliseconds, then the ablation table on its test
queries (bm25, dense, hybrid; rerank with ``--reranker``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from hybrid_engine.cli._engine import build_engine, reranker
from hybrid_engine.cli._options import (
    DEFAULT_VARIANT,
    add_quiet_option,
    add_reranker_options,
    add_threads_option,
)
from hybrid_engine.cli._output import print_eval_tables, print_hits
from hybrid_engine.dense.embedding_cache import default_cache_dir
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.evaluation import Dataset, load_beir
from hybrid_engine.evaluation.runner import documents_with_text
from hybrid_engine.evaluation.scoring import Searcher, evaluate_searcher
from hybrid_engine.pipeline.rerank import RERANK_DEPTH

DEFAULT_DATASET = Path(__file__).resolve().parents[3] / "shared" / "data" / "beir" / "scifact"
"""The embedded default collection: ``../shared/data/beir/scifact`` beside the checkout."""

DEMO_QUERIES = (
    "0-dimensional biomaterials show inductive properties.",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
    "Vitamin D deficiency raises the risk of multiple sclerosis.",
)
"""The queries whose hits the demo prints (``--query`` replaces them)."""
DEMO_RETRIEVERS = ("bm25", "dense")


def add_parser(subparsers: Any) -> None:
    """Add ``demo`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser(
        "demo",
        help="the hybrid engine on SciFact: fused hits of a few queries with stage timings, "
        "then nDCG@10 and more of bm25, dense and hybrid (and rerank) on its test queries",
    )
    p.add_argument(
        "--dataset",
        default=None,
        help=f"BEIR-layout folder with qrels/test.tsv (default: {DEFAULT_DATASET})",
    )
    p.add_argument("positional_dataset", nargs="?", metavar="DATASET", help="as --dataset")
    p.add_argument(
        "--query",
        action="append",
        default=None,
        help="a query whose hits to print; repeat for more (default: three SciFact claims)",
    )
    p.add_argument("-k", type=int, default=5, help="hits per query (default: %(default)s)")
    add_reranker_options(p)
    add_threads_option(p)
    add_quiet_option(p, "no progress bars or progress lines")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Build the engine, print the demo queries' hits, then the ablation table."""
    cross_encoder = reranker(args) if args.reranker is not None else None  # fails before indexing
    dataset = load_beir(_dataset_path(args), "test")
    documents = documents_with_text(dataset)
    _progress(args, f"indexing {len(documents)} documents of {dataset.name}")
    start = time.perf_counter()
    engine = build_engine(
        documents,
        retrievers=DEMO_RETRIEVERS,
        variant=DEFAULT_VARIANT,
        leg_options={},
        num_threads=args.threads,
        show_progress=not args.quiet,
    )
    print(
        f"{engine!r} of {dataset.name}, {DEFAULT_VARIANT} bi-encoder, built in "
        f"{time.perf_counter() - start:.1f}s (document embeddings cached in "
        f"{default_cache_dir()})"
    )
    rerank = None
    if cross_encoder is not None:
        engine = engine.with_reranker(cross_encoder)
        rerank = RERANK_DEPTH
    queries = args.query or list(DEMO_QUERIES)
    engine.search(queries[:1], args.k, rerank=rerank, num_threads=args.threads)  # warm-up
    for query in queries:
        result = engine.search([query], args.k, rerank=rerank, num_threads=args.threads)
        print_hits(query, result.hits()[0], result.timings)
    rows = _ablation(engine, dataset, rerank, args)
    legs = f"dense: the {DEFAULT_VARIANT} bi-encoder; hybrid: bm25 and dense fused"
    if rerank is not None:
        legs += f"; rerank: hybrid's top {rerank} reranked by {args.reranker}"
    print(
        f"\n{dataset.name} test: {len(dataset.queries)} queries, {len(dataset.corpus)} "
        f"documents ({legs})"
    )
    print_eval_tables(rows)
    return 0


def _ablation(
    engine: HybridIndex, dataset: Dataset, rerank: int | None, args: argparse.Namespace
) -> dict[str, dict[str, float]]:
    """Each leg of ``engine`` alone, the fused engine and, with ``rerank``, the reranked one,
    scored on ``dataset``'s queries (``evaluate_searcher``): the rows of ``eval``."""
    bm25, dense, threads = engine.bm25, engine.dense, args.threads
    assert bm25 is not None and dense is not None  # built with DEMO_RETRIEVERS
    searchers: dict[str, Searcher] = {
        "bm25": lambda queries, k: bm25.search(queries, k, num_threads=threads),
        "dense": lambda queries, k: dense.search(queries, k, num_threads=threads),
        "hybrid": lambda queries, k: engine.search(queries, k, num_threads=threads),
    }
    if rerank is not None:
        searchers["rerank"] = lambda queries, k: engine.search(
            queries, k, rerank=rerank, num_threads=threads
        )
    rows = {}
    for name, search in searchers.items():
        _progress(args, f"scoring {name} on the {len(dataset.queries)} test queries")
        rows[name] = evaluate_searcher(dataset, search, engine.doc_ids).to_dict()
    return rows


def _dataset_path(args: argparse.Namespace) -> str | Path:
    """The ``--dataset`` or positional ``DATASET`` given, else ``DEFAULT_DATASET``.

    Raises
    ------
    ValueError
        Both are given.
    """
    if args.dataset is not None and args.positional_dataset is not None:
        raise ValueError("give the dataset once: as --dataset or as the positional DATASET")
    return args.dataset or args.positional_dataset or DEFAULT_DATASET


def _progress(args: argparse.Namespace, message: str) -> None:
    """A progress line on stderr (beside the progress bars), unless ``--quiet``."""
    if not args.quiet:
        print(f"{message} ...", file=sys.stderr, flush=True)
