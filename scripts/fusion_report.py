"""nDCG@10 of BM25, dense and every fusion method of the two, per collection and on average.

For every BEIR-layout collection under ``--data`` (default ``../shared/data/beir``) the script
builds BM25 (defaults) and dense retrieval (fp32 all-MiniLM-L6-v2, embeddings through the
embedding cache) once over the documents with text, retrieves the top ``--depth`` (100) of
each for the test queries, fuses the two lists with every method of ``hybrid_engine.fusion``
(equal weights, ``rrf_k`` 60) and prints nDCG@10 as a markdown table::

    PYTHONPATH=. python scripts/fusion_report.py [--json fusion.json]

``DEFAULT_METHOD`` is the method with the best average here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hybrid_engine import BM25Index, DenseIndex, EmbeddingCache, Encoder, SearchResult, fuse
from hybrid_engine.cli import DEFAULT_DATASET
from hybrid_engine.evaluation import Dataset, evaluate, load_beir, run_from_results
from hybrid_engine.evaluation.runner import documents_with_text
from hybrid_engine.fusion import METHODS

DEFAULT_DATA = DEFAULT_DATASET.parent


def ndcg10(dataset: Dataset, result: SearchResult, doc_ids: list[str]) -> float:
    run = run_from_results(result.ids, result.scores, list(dataset.queries), doc_ids)
    return evaluate(run, dataset.qrels, ["ndcg@10"])["ndcg@10"]


def collection_row(folder: Path, encoder: Encoder, depth: int) -> dict[str, float]:
    """nDCG@10 of ``bm25``, ``dense`` and each fusion method on one collection's test split."""
    dataset = load_beir(folder)
    corpus = documents_with_text(dataset)
    lexical = BM25Index.build(corpus, show_progress=False)
    dense = DenseIndex.build(corpus, encoder=encoder, embedding_cache=EmbeddingCache())
    doc_ids = list(lexical.doc_ids)
    queries = list(dataset.queries.values())
    legs = [lexical.search(queries, depth), dense.search(queries, depth)]
    row = {"bm25": ndcg10(dataset, legs[0], doc_ids), "dense": ndcg10(dataset, legs[1], doc_ids)}
    for method in METHODS:
        row[method] = ndcg10(dataset, fuse(legs, depth, method=method), doc_ids)
    return row


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of collections")
    parser.add_argument("--depth", type=int, default=100, help="hits per leg (default 100)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    folders = sorted(p for p in args.data.iterdir() if (p / "corpus.jsonl").is_file())
    if not folders:
        print(f"no collections under {args.data}", file=sys.stderr)
        return 2
    encoder = Encoder.load()
    rows = {folder.name: collection_row(folder, encoder, args.depth) for folder in folders}
    columns = list(next(iter(rows.values())))
    rows["average"] = {c: sum(r[c] for r in rows.values()) / len(folders) for c in columns}
    print(markdown(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
