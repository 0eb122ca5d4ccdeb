"""Quality of the quantized dense leg on the five shared collections, with a paired test.

For every BEIR-layout collection under ``--data`` (default ``../shared/data/beir``) the script
builds the default hybrid (``runner.build_hybrid``: BM25 and the int8 bi-encoder's vectors,
through the embedding cache), then three dense legs over the same vectors, each with a graph
(``exact_threshold=0``, the engine's other defaults): float32 (``quantization=None``), int8 and
binary, at their default oversampling. For each it reports

* recall@10 of ``search(k=10)`` against exact float32 search (``search(exact=True)``) over the
  collection's queries;
* nDCG@10 (pytrec_eval) of the dense leg alone (``k=10``) and of the default hybrid with that
  leg (each leg's top 100 fused by ``fuse``'s default method), and the difference from
  float32 with the two-sided p-value of a paired randomization (sign-flip) test over the
  judged queries.

Prints a Markdown table (``--json FILE`` also writes the rows)::

    PYTHONPATH=. python benchmarks/reports/quantization_quality.py [--rounds 20000]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from fusion_significance import collection_hybrids, per_query_ndcg10, randomization_p

from hybrid_engine import DenseIndex, fuse
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH

KINDS = (None, "int8", "binary")


def recall_at_10(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean share of each query's exact top 10 that ``found`` holds."""
    return float(np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found, truth, strict=True)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET.parent)
    parser.add_argument("--rounds", type=int, default=20000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    print("| collection | queries | leg | recall@10 vs exact | dense nDCG@10 | diff | p "
          "| hybrid nDCG@10 | diff | p |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, dataset, engine, queries in collection_hybrids(args.data):
        assert engine.bm25 is not None and engine.dense is not None
        doc_ids = list(engine.doc_ids)
        encoder = engine.dense.encoder
        assert encoder is not None
        vectors = engine.dense.vectors
        query_vectors = encoder.encode(queries)
        bm25 = engine.bm25.search(queries, DEFAULT_DEPTH)
        exact = DenseIndex.from_vectors(vectors).search(query_vectors, 10, exact=True).ids
        base: dict[str, np.ndarray] = {}
        for kind in KINDS:
            leg = DenseIndex.from_vectors(vectors, quantization=kind, exact_threshold=0)
            found = leg.search(query_vectors, 10)  # as a user asks: oversampled from k = 10
            dense = per_query_ndcg10(dataset, found, doc_ids)
            deep = leg.search(query_vectors, DEFAULT_DEPTH)  # as the hybrid asks its legs
            hybrid = per_query_ndcg10(dataset, fuse([bm25, deep], 10, depth=DEFAULT_DEPTH), doc_ids)
            if kind is None:
                base = {"dense": dense, "hybrid": hybrid}
            row = {
                "collection": name,
                "queries": len(dense),
                "quantization": kind,
                "oversample": leg.oversample,
                "recall@10": recall_at_10(found.ids, exact),
                "dense_ndcg@10": float(dense.mean()),
                "dense_diff": float(dense.mean() - base["dense"].mean()),
                "dense_p": randomization_p(dense, base["dense"], args.rounds),
                "hybrid_ndcg@10": float(hybrid.mean()),
                "hybrid_diff": float(hybrid.mean() - base["hybrid"].mean()),
                "hybrid_p": randomization_p(hybrid, base["hybrid"], args.rounds),
            }
            rows.append(row)
            print(
                f"| {name} | {row['queries']} | {kind or 'float32'} | "
                f"{row['recall@10']:.4f} | {row['dense_ndcg@10']:.4f} | "
                f"{row['dense_diff']:+.4f} | {row['dense_p']:.3f} | "
                f"{row['hybrid_ndcg@10']:.4f} | {row['hybrid_diff']:+.4f} | "
                f"{row['hybrid_p']:.3f} |",
                flush=True,
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
