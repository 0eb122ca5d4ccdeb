"""Per-query latency of the hybrid engine on SciFact, end to end from query text.

Each test query is searched alone with ``HybridIndex.search(..., num_threads=1)``: BM25 top
100, the dense leg (query encoding and HNSW top 100), the default fusion (DBSF) and, with
``--reranker``, the cross-encoder over the fused top ``--rerank`` (int8 unless
``--rerank-variant``), to the top 10. Prints p50 / p95 / max of the whole call and p50 / p95 of
each stage over the 300 test queries, ``--repeats`` times, for the fp32 and int8 bi-encoders::

    PYTHONPATH=. python benchmarks/reports/hybrid_latency.py [--data ../shared/data/beir/scifact]
        [--reranker MODEL [--rerank 30] [--rerank-max-length N]]

MODEL is a prepared cross-encoder folder or its name in the models folder. A reranker its
validation gate refused is not run (the engine serves the fused ranking): time an accepted one.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from hybrid_engine import CrossEncoder, EmbeddingCache, Encoder, HybridIndex
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.evaluation import load_beir
from hybrid_engine.evaluation.runner import documents_with_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--variants", default="fp32,int8", help="bi-encoder variants")
    parser.add_argument("--reranker", default=None)
    parser.add_argument("--rerank", type=int, default=30)
    parser.add_argument("--rerank-variant", default="int8")
    parser.add_argument("--rerank-max-length", type=int, default=None)
    args = parser.parse_args()
    dataset = load_beir(args.data)
    corpus = documents_with_text(dataset)
    queries = list(dataset.queries.values())
    reranker = None
    if args.reranker is not None:
        reranker = CrossEncoder.load(
            args.reranker,
            variant=args.rerank_variant,
            max_length=args.rerank_max_length,
        )
        print(f"reranker {reranker.name} ({reranker.variant}, max_length {reranker.max_length})")
    for variant in args.variants.split(","):
        engine = HybridIndex.build(
            corpus,
            encoder=Encoder.load(variant=variant),
            reranker=reranker,
            embedding_cache=EmbeddingCache(),
        )
        rerank = args.rerank if reranker is not None else None
        for query in queries[:10]:  # warm-up: numba compilation, ORT first runs
            engine.search([query], 10, rerank=rerank, num_threads=1)
        for _ in range(args.repeats):
            times: list[float] = []
            stages: dict[str, list[float]] = {}
            for query in queries:
                start = time.perf_counter()
                result = engine.search([query], 10, rerank=rerank, num_threads=1)
                times.append((time.perf_counter() - start) * 1000)
                for stage, ms in result.timings.items():
                    stages.setdefault(stage, []).append(ms)
            p50, p95 = np.percentile(times, [50, 95])
            per_stage = ", ".join(
                f"{stage} {np.percentile(ms, 50):.2f}/{np.percentile(ms, 95):.2f}"
                for stage, ms in stages.items()
                if stage != "total"
            )
            print(
                f"{variant}{' + rerank' if rerank else ''}: p50 {p50:.2f} ms, p95 {p95:.2f} ms, "
                f"max {max(times):.2f} ms; stages p50/p95 ms: {per_stage}"
            )


if __name__ == "__main__":
    main()
