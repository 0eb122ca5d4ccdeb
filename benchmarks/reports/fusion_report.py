"""nDCG@10 of BM25, dense, SPLADE and every fusion method over two legs (BM25 + dense) and
three (+ SPLADE), per collection and on average.

For every BEIR-layout collection under ``--data`` (default ``../shared/data/beir``) the script
builds BM25 (defaults), dense retrieval (fp32 all-MiniLM-L6-v2, embeddings through the
embedding cache) and SPLADE (fp32 splade-tiny) once over the documents with text, retrieves
the top ``--depth`` (100) of each for the test queries, fuses the BM25 and dense lists, then
all three, with every method of ``hybrid_engine.pipeline.fusion`` (equal weights, ``rrf_k`` 60) and
prints nDCG@10 as a markdown table (``METHOD`` two-way, ``METHOD+splade`` three-way), then
SPLADE's costs (corpus encoding and index build seconds, documents encoded per second, query
encoding milliseconds, one query per call)::

    PYTHONPATH=. python benchmarks/reports/fusion_report.py [--json fusion.json]

``DEFAULT_METHOD`` is the method with the best average here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from hybrid_engine import (
    BM25Index,
    DenseIndex,
    EmbeddingCache,
    Encoder,
    SearchResult,
    SpladeEncoder,
    SpladeIndex,
    fuse,
)
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.evaluation import Dataset, evaluate, load_beir, run_from_results
from hybrid_engine.evaluation.runner import documents_with_text
from hybrid_engine.pipeline.fusion import METHODS

DEFAULT_DATA = DEFAULT_DATASET.parent
RETRIEVERS = ("bm25", "dense", "splade")


def ndcg10(dataset: Dataset, result: SearchResult, doc_ids: list[str]) -> float:
    run = run_from_results(result.ids, result.scores, list(dataset.queries), doc_ids)
    return evaluate(run, dataset.qrels, ["ndcg@10"])["ndcg@10"]


def collection_row(
    folder: Path, encoder: Encoder, splade_encoder: SpladeEncoder, depth: int
) -> tuple[dict[str, float], dict[str, float]]:
    """nDCG@10 of ``bm25``, ``dense``, ``splade`` and each fusion method over two and three
    legs on one collection's test split, and SPLADE's costs there."""
    dataset = load_beir(folder)
    corpus = documents_with_text(dataset)
    lexical = BM25Index.build(corpus, show_progress=False)
    dense = DenseIndex.build(corpus, encoder=encoder, embedding_cache=EmbeddingCache())
    start = time.perf_counter()
    splade = SpladeIndex.build(corpus, encoder=splade_encoder)
    build_s = time.perf_counter() - start
    doc_ids = list(lexical.doc_ids)
    queries = list(dataset.queries.values())
    legs = [lexical.search(queries, depth), dense.search(queries, depth)]
    legs.append(splade.search(queries, depth))
    row = {name: ndcg10(dataset, leg, doc_ids) for name, leg in zip(RETRIEVERS, legs, strict=True)}
    for method in METHODS:
        row[method] = ndcg10(dataset, fuse(legs[:2], depth, method=method), doc_ids)
        row[f"{method}+splade"] = ndcg10(dataset, fuse(legs, depth, method=method), doc_ids)
    times = []
    for query in queries[:200]:
        tick = time.perf_counter()
        splade_encoder.encode([query])
        times.append((time.perf_counter() - tick) * 1000)
    costs = {
        "build_s": build_s,
        "docs_per_s": len(corpus) / build_s,
        "query_encode_p50_ms": float(np.percentile(times, 50)),
        "query_encode_p95_ms": float(np.percentile(times, 95)),
        "postings_per_doc": splade.num_postings / len(corpus),
    }
    return row, costs


def markdown(rows: dict[str, dict[str, float]]) -> str:
    names = list(rows)
    columns = list(next(iter(rows.values())))
    lines = [
        "| nDCG@10 | " + " | ".join(names) + " |",
        "|---" * (len(names) + 1) + "|",
    ]
    for column in columns:
        best = max(rows["average"][c] for c in columns)
        cells = [f"{rows[name][column]:.4f}" for name in names]
        label = f"**{column}**" if rows["average"][column] == best else column
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown_costs(costs: dict[str, dict[str, float]]) -> str:
    columns = list(next(iter(costs.values())))
    lines = ["| SPLADE | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for name, figures in costs.items():
        lines.append(f"| {name} | " + " | ".join(f"{figures[c]:.2f}" for c in columns) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of collections")
    parser.add_argument("--depth", type=int, default=100, help="hits per leg (default 100)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument(
        "--splade-model", type=Path, default=None, help="SPLADE model folder (default: prepared)"
    )
    args = parser.parse_args()
    folders = sorted(p for p in args.data.iterdir() if (p / "corpus.jsonl").is_file())
    if not folders:
        print(f"no collections under {args.data}", file=sys.stderr)
        return 2
    encoder = Encoder.load()
    splade_encoder = SpladeEncoder.load(args.splade_model)
    rows: dict[str, dict[str, float]] = {}
    costs: dict[str, dict[str, float]] = {}
    for folder in folders:
        rows[folder.name], costs[folder.name] = collection_row(
            folder, encoder, splade_encoder, args.depth
        )
        print(f"{folder.name}: {rows[folder.name]} {costs[folder.name]}", file=sys.stderr)
    columns = list(next(iter(rows.values())))
    rows["average"] = {c: sum(r[c] for r in rows.values()) / len(folders) for c in columns}
    print(markdown(rows))
    print()
    print(markdown_costs(costs))
    if args.json:
        report = {"ndcg@10": rows, "splade_costs": costs}
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
