"""Per-query latency of the BM25 + dense hybrid on SciFact, end to end from query text.

Each test query is searched alone: BM25 top 100 (one thread), the dense leg (query encoding
and HNSW top 100, one hnswlib thread), then ``fuse`` (the default DBSF) to the top 10. Prints
p50 / p95 / max over the 300 test queries, twice, for the fp32 and int8 encoders::

    python scripts/hybrid_latency.py [--data ../shared/data/beir/scifact]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from hybrid_engine import BM25Index, DenseIndex, EmbeddingCache, Encoder, SearchResult, fuse
from hybrid_engine.evaluation import load_beir
from hybrid_engine.evaluation.runner import HYBRID_DEPTH, documents_with_text

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"


def hybrid_search(lexical: BM25Index, dense: DenseIndex, query: str) -> SearchResult:
    """One query through both legs and the default fusion, to the top 10."""
    legs = [
        lexical.search([query], HYBRID_DEPTH, num_threads=1),
        dense.search([query], HYBRID_DEPTH, num_threads=1),
    ]
    return fuse(legs, 10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    dataset = load_beir(args.data)
    corpus = documents_with_text(dataset)
    queries = list(dataset.queries.values())
    lexical = BM25Index.build(corpus)
    for variant in ("fp32", "int8"):
        encoder = Encoder.load(variant=variant)
        dense = DenseIndex.build(corpus, encoder=encoder, embedding_cache=EmbeddingCache())
        for query in queries[:10]:  # warm-up: numba compilation, ORT first runs
            hybrid_search(lexical, dense, query)
        for _ in range(args.repeats):
            times = []
            for query in queries:
                start = time.perf_counter()
                hybrid_search(lexical, dense, query)
                times.append((time.perf_counter() - start) * 1000)
            p50, p95 = np.percentile(times, [50, 95])
            print(f"{variant}: p50 {p50:.2f} ms, p95 {p95:.2f} ms, max {max(times):.2f} ms")


if __name__ == "__main__":
    main()
