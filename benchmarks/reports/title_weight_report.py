"""The BM25 leg's title weight (``bm25_options={"title_weight": w}``) against title and text
as one field (w = 1), per collection: nDCG@10 of BM25 alone and of the default hybrid (BM25 +
int8 dense, DBSF), with the one-sided family-wise p-value that each weight gains over w = 1
(paired max-t sign flips over the weights, ``evaluation.significance``, as the gates').

For every BEIR-layout collection under ``--data`` the script builds ``HybridIndex`` over the
documents with text once per weight (corpus embeddings through the default
``EmbeddingCache``), searches the test queries and scores them with pytrec_eval. Collections
whose documents have no titles (MED, nfcorpus-partial here) give the same figures for every
weight, and are left out::

    PYTHONPATH=. python benchmarks/reports/title_weight_report.py [--weights 1,2,3] \\
        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine import EmbeddingCache, Encoder, HybridIndex
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.evaluation import load_beir
from hybrid_engine.evaluation.metrics import evaluate, run_from_results
from hybrid_engine.evaluation.runner import documents_with_text
from hybrid_engine.evaluation.significance import max_t_p_values

COLLECTIONS = ("scifact", "cranfield", "cisi", "med", "nfcorpus-partial")


def _per_query(engine: HybridIndex, dataset: Any, leg: str) -> dict[str, float]:
    """Per-query nDCG@10 of the BM25 leg alone or of the engine."""
    query_ids = list(dataset.queries)
    texts = [dataset.queries[q] for q in query_ids]
    if leg == "bm25":
        assert engine.bm25 is not None
        result = engine.bm25.search(texts, 100)
    else:
        result = engine.search(texts, 100)
    run = run_from_results(result.ids, result.scores, query_ids, list(engine.doc_ids))
    scored = evaluate(run, dataset.qrels, ("ndcg@10",), per_query=True)
    return {q: values["ndcg@10"] for q, values in scored.per_query.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET.parent)
    parser.add_argument("--weights", default="1,2,3")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    weights = [int(w) for w in args.weights.split(",")]
    encoder = Encoder.load()
    report: dict[str, Any] = {}
    print(
        "| collection | leg | " + " | ".join(f"w={w}" for w in weights) + " | p (gain over w=1) |"
    )
    print("|---|---|" + "---|" * (len(weights) + 1))
    for name in COLLECTIONS:
        dataset = load_beir(args.data / name, "test")
        docs = documents_with_text(dataset)
        if not any((doc.get("title") or "").strip() for doc in docs):
            continue
        figures: dict[str, dict[int, dict[str, float]]] = {"bm25": {}, "hybrid": {}}
        for weight in weights:
            engine = HybridIndex.build(
                docs,
                encoder=encoder,
                bm25_options={"title_weight": weight},
                embedding_cache=EmbeddingCache(),
            )
            for leg in figures:
                figures[leg][weight] = _per_query(engine, dataset, leg)
        report[name] = {}
        for leg, by_weight in figures.items():
            ids = sorted(by_weight[weights[0]])
            means = [float(np.mean([by_weight[w][q] for q in ids])) for w in weights]
            gains = np.array(
                [[by_weight[w][q] - by_weight[1][q] for w in weights[1:]] for q in ids]
            )
            p_values = [float(p) for p in max_t_p_values(gains)]
            report[name][leg] = {
                "ndcg@10": dict(zip(weights, means, strict=True)),
                "p_vs_1": p_values,
            }
            cells = " | ".join(f"{m:.4f}" for m in means)
            print(f"| {name} | {leg} | {cells} | {', '.join(f'{p:.3f}' for p in p_values)} |")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
