"""Per-query latency of the cross-encoder on the hybrid's top 30, SciFact test, by truncation.

For each test query, the hybrid (``evaluation.runner.build_hybrid``: BM25 + fp32 dense, fused)
gives the top ``--depth`` documents; ``CrossEncoder.score`` of those (query, title + text)
pairs is timed, one call per query, for each variant, thread count and ``max_length`` (tokens
per pair; the passage truncation). Prints p50 / p95 ms and the nDCG@10 of the reranked lists
(``rerank``, pure cross-encoder order) next to the hybrid's own. The CPU time of each call
(``time.process_time``) is printed too: with one thread it is the call's latency on an idle
core, a figure that other processes on a shared machine disturb less than the wall time::

    PYTHONPATH=. python benchmarks/reports/rerank_latency.py MODEL [--lengths 256,192,128,96,64]
        [--threads 2,1] [--variants fp32,int8] [--queries N] [--json FILE]

MODEL is a folder prepared by ``hybrid-engine models prepare-reranker`` (or its name).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hybrid_engine import CrossEncoder, SearchResult, rerank
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.corpus import document_text
from hybrid_engine.evaluation import evaluate, load_beir
from hybrid_engine.evaluation.metrics import run_from_results
from hybrid_engine.evaluation.runner import build_hybrid, documents_with_text


def _ints(text: str) -> list[int]:
    return [int(part) for part in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="prepared cross-encoder folder or name")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--depth", type=int, default=30)
    parser.add_argument("--lengths", type=_ints, default=[256, 192, 128, 96, 64])
    parser.add_argument("--threads", type=_ints, default=[2, 1])
    parser.add_argument("--variants", default="fp32,int8")
    parser.add_argument("--queries", type=int, default=None, help="first N test queries only")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    args = parser.parse_args()

    dataset = load_beir(args.data)
    corpus = documents_with_text(dataset)
    texts = [document_text(doc, i)[0] for i, doc in enumerate(corpus)]
    engine = build_hybrid(dataset)
    query_ids = list(dataset.queries)[: args.queries]
    queries = [dataset.queries[q] for q in query_ids]
    fused = engine.search(queries, args.depth)

    qrels = {q: dataset.qrels[q] for q in query_ids}

    def ndcg(result: SearchResult) -> float:
        run = run_from_results(result.ids, result.scores, query_ids, engine.doc_ids)
        return evaluate(run, qrels, ("ndcg@10",))["ndcg@10"]

    print(f"{len(queries)} queries, top {args.depth}; hybrid nDCG@10 {ndcg(fused):.4f}")
    print(
        "| variant | threads | max_length | p50 ms | p95 ms | CPU p50 ms | CPU p95 ms | nDCG@10 |"
    )
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for variant in args.variants.split(","):
        for threads in args.threads:
            for max_length in args.lengths:
                model = CrossEncoder.load(
                    args.model, variant=variant, num_threads=threads, max_length=max_length
                )
                pairs = [[texts[i] for i in row if i >= 0] for row in fused.ids]
                for query, passages in zip(
                    queries[:5], pairs[:5], strict=True
                ):  # warm-up: ORT first runs
                    model.score(query, passages)
                times, cpu_times, measured = [], [], {}
                for query, passages in zip(queries, pairs, strict=True):
                    start, cpu_start = time.perf_counter(), time.process_time()
                    values = model.score(query, passages)
                    cpu_times.append((time.process_time() - cpu_start) * 1000)
                    times.append((time.perf_counter() - start) * 1000)
                    measured.update(((query, p), v) for p, v in zip(passages, values, strict=True))
                p50, p95 = np.percentile(times, [50, 95])
                cpu50, cpu95 = np.percentile(cpu_times, [50, 95])
                # The timed scores (same pairs, same model) through rerank.
                quality = ndcg(rerank(fused, queries, texts, _Replay(measured), depth=args.depth))
                row = {
                    "variant": variant,
                    "threads": threads,
                    "max_length": max_length,
                    "p50_ms": round(float(p50), 2),
                    "p95_ms": round(float(p95), 2),
                    "cpu_p50_ms": round(float(cpu50), 2),
                    "cpu_p95_ms": round(float(cpu95), 2),
                    "ndcg@10": round(quality, 4),
                }
                rows.append(row)
                print(
                    f"| {variant} | {threads} | {max_length} | {p50:.1f} | {p95:.1f} | "
                    f"{cpu50:.1f} | {cpu95:.1f} | {quality:.4f} |",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps({"hybrid_ndcg@10": ndcg(fused), "rows": rows}, indent=2))


class _Replay:
    """A stand-in cross-encoder returning the scores measured in the timed calls."""

    def __init__(self, measured: dict[tuple[str, str], float]) -> None:
        self._measured = measured

    def score(self, queries: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        return np.array(
            [self._measured[q, p] for q, p in zip(queries, passages, strict=True)], np.float32
        )


if __name__ == "__main__":
    main()
