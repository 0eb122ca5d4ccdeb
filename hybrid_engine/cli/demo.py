"""``hybrid-engine demo``: BM25 and dense retrieval on the embedded collection (SciFact): top
hits of a few queries, then the evaluation table."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hybrid_engine.cli._output import print_table
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.evaluation import Dataset, load_beir
from hybrid_engine.evaluation.runner import score_searcher
from hybrid_engine.lexical.bm25 import BM25Index
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.store import ModelNotFoundError

DEFAULT_DATASET = Path(__file__).resolve().parents[3] / "shared" / "data" / "beir" / "scifact"
"""The embedded default collection: ``../shared/data/beir/scifact`` beside the checkout."""

DEMO_QUERIES = (
    "0-dimensional biomaterials show inductive properties.",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
    "Vitamin D deficiency raises the risk of multiple sclerosis.",
)


def add_parser(subparsers: Any) -> None:
    """Add ``demo`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser(
        "demo", help="BM25 and dense on scifact: top hits and the evaluation table"
    )
    p.add_argument(
        "dataset",
        nargs="?",
        default=str(DEFAULT_DATASET),
        help=f"BEIR-layout folder (default: {DEFAULT_DATASET})",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=run)


def _print_leg_hits(
    index: BM25Index | DenseIndex, queries: Sequence[str], titles: dict[str, str]
) -> None:
    """Each query's top 5 of ``index``: rank, score, id and title."""
    result = index.search(list(queries), 5)
    for query, ids, scores in zip(queries, result.ids, result.scores, strict=True):
        print(f"\nquery: {query}")
        if ids[0] < 0:
            print("  (no document holds any query term)")
        for rank, (i, score) in enumerate(zip(ids, scores, strict=True), 1):
            if i >= 0:
                doc_id = index.doc_ids[int(i)]
                title = titles.get(doc_id, "")
                title = title if len(title) <= 70 else title[:67] + "..."
                print(f"  {rank:>3}. {score:8.4f}  {doc_id:<12} {title}")


def _demo_leg(
    name: str,
    index: BM25Index | DenseIndex,
    dataset: Dataset,
    titles: dict[str, str],
    rows: dict[str, dict[str, float]],
) -> None:
    """Print one retriever's top hits of the demo queries and add its row to the table."""
    print(f"\n== {name} ==")
    _print_leg_hits(index, DEMO_QUERIES, titles)
    metrics, queries_per_s = score_searcher(dataset, index.search, index.doc_ids)
    rows[name] = {**metrics, "queries_per_s": queries_per_s}


def run(args: argparse.Namespace) -> int:
    """Index the collection with BM25, then dense when the model is prepared; print each
    one's hits and the table."""
    dataset = load_beir(args.dataset, "test")
    titles = {doc["_id"]: doc["title"] for doc in dataset.corpus}
    rows: dict[str, dict[str, float]] = {}
    start = time.perf_counter()
    index = BM25Index.build(dataset.corpus, show_progress=not args.quiet)
    print(
        f"indexed {index.num_documents} documents of {dataset.name} in "
        f"{time.perf_counter() - start:.2f}s ({index!r})"
    )
    _demo_leg("bm25", index, dataset, titles, rows)
    try:
        encoder = Encoder.load()
    except ModelNotFoundError as exc:
        print(f"\n(dense retrieval skipped: {exc})")
    else:
        start = time.perf_counter()
        dense = DenseIndex.build(
            dataset.corpus,
            encoder=encoder,
            embedding_cache=EmbeddingCache(),
            show_progress=not args.quiet,
        )
        print(
            f"\nembedded {dense.num_documents} documents with {encoder!r} in "
            f"{time.perf_counter() - start:.2f}s (cached for the next run)"
        )
        _demo_leg("dense", dense, dataset, titles, rows)
    print(
        f"\n{dataset.name} test ({len(dataset.queries)} queries, {len(dataset.corpus)} documents)"
    )
    print_table(rows)
    return 0
