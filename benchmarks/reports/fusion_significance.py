"""The default hybrid against the better single retriever, per collection, with a paired test.

For every BEIR-layout collection under ``--data`` (default ``../shared/data/beir``) the script
builds the default hybrid (``runner.build_hybrid``: BM25 and fp32 dense over the documents with
text), fuses the legs' top 100 with ``fuse``'s default method, and compares per-query nDCG@10
(pytrec_eval) with the better of BM25 and dense alone: the mean difference and the two-sided
p-value of a paired randomization (sign-flip) test::

    PYTHONPATH=. python benchmarks/reports/fusion_significance.py [--rounds 20000]
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytrec_eval

from hybrid_engine import HybridIndex, SearchResult, fuse
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.evaluation import Dataset, load_beir, run_from_results
from hybrid_engine.evaluation.runner import build_hybrid
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH


def per_query_ndcg10(dataset: Dataset, result: SearchResult, doc_ids: list[str]) -> np.ndarray:
    """nDCG@10 of every judged query (0 for one the run misses), in qrels order."""
    evaluator = pytrec_eval.RelevanceEvaluator(
        {q: dict(judged) for q, judged in dataset.qrels.items()}, {"ndcg_cut.10"}
    )
    scored = evaluator.evaluate(
        run_from_results(result.ids, result.scores, list(dataset.queries), doc_ids)
    )
    return np.array([scored[q]["ndcg_cut_10"] if q in scored else 0.0 for q in dataset.qrels])


def collection_hybrids(data: Path) -> Iterator[tuple[str, Dataset, HybridIndex, list[str]]]:
    """Each BEIR-layout collection under ``data`` (by name): its name, dataset, default hybrid
    (``runner.build_hybrid``: BM25 and dense) and query texts (in the dataset's order)."""
    for folder in sorted(p for p in data.iterdir() if (p / "corpus.jsonl").is_file()):
        dataset = load_beir(folder)
        yield folder.name, dataset, build_hybrid(dataset), list(dataset.queries.values())


def randomization_p(a: np.ndarray, b: np.ndarray, rounds: int, seed: int = 0) -> float:
    """Two-sided p of the mean paired difference under random sign flips."""
    difference = a - b
    observed = abs(difference.mean())
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(rounds, len(difference)))
    return float((np.abs((signs * difference).mean(axis=1)) >= observed - 1e-12).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET.parent)
    parser.add_argument("--rounds", type=int, default=20000)
    args = parser.parse_args()
    print("| collection | queries | hybrid | bm25 | dense | hybrid - best single | p |")
    print("|---|---|---|---|---|---|---|")
    for name, dataset, engine, queries in collection_hybrids(args.data):
        assert engine.bm25 is not None and engine.dense is not None
        doc_ids = list(engine.doc_ids)
        legs = [
            engine.bm25.search(queries, DEFAULT_DEPTH),
            engine.dense.search(queries, DEFAULT_DEPTH),
        ]
        hybrid = per_query_ndcg10(dataset, fuse(legs, 10, depth=DEFAULT_DEPTH), doc_ids)
        bm25, dense = (per_query_ndcg10(dataset, leg, doc_ids) for leg in legs)
        best = dense if dense.mean() > bm25.mean() else bm25
        print(
            f"| {name} | {len(hybrid)} | {hybrid.mean():.4f} | {bm25.mean():.4f} | "
            f"{dense.mean():.4f} | {hybrid.mean() - best.mean():+.4f} | "
            f"{randomization_p(hybrid, best, args.rounds):.3f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
