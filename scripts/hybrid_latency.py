"""Per-query latency of the BM25 + dense hybrid on SciFact, end to end from query text.

Each test query is searched alone with ``HybridIndex.search(..., num_threads=1)``: BM25 top
100, the dense leg (query encoding and HNSW top 100), then the default fusion (DBSF) to the
top 10. Prints
p50 / p95 / max over the 300 test queries, twice, for the fp32 and int8 encoders::

    python scripts/hybrid_latency.py [--data ../shared/data/beir/scifact]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from hybrid_engine import EmbeddingCache, Encoder, HybridIndex
from hybrid_engine.cli import DEFAULT_DATASET
from hybrid_engine.evaluation import load_beir
from hybrid_engine.evaluation.runner import documents_with_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    dataset = load_beir(args.data)
    corpus = documents_with_text(dataset)
    queries = list(dataset.queries.values())
    for variant in ("fp32", "int8"):
        engine = HybridIndex.build(
            corpus, encoder=Encoder.load(variant=variant), embedding_cache=EmbeddingCache()
        )
        for query in queries[:10]:  # warm-up: numba compilation, ORT first runs
            engine.search([query], 10, num_threads=1)
        for _ in range(args.repeats):
            times = []
            for query in queries:
                start = time.perf_counter()
                engine.search([query], 10, num_threads=1)
                times.append((time.perf_counter() - start) * 1000)
            p50, p95 = np.percentile(times, [50, 95])
            print(f"{variant}: p50 {p50:.2f} ms, p95 {p95:.2f} ms, max {max(times):.2f} ms")


if __name__ == "__main__":
    main()
