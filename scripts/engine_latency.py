"""Median milliseconds of one ``HybridIndex.search`` per call (one query from text, k=10) on
SciFact, BM25 + int8 dense, corpus vectors from the embedding cache.

Prints one number, so two versions of the package can be compared in alternating fresh
processes (issue 10: the merged live engine against the engine before it was live)::

    git worktree add /tmp/prelive d72e74d^ && (cd /tmp/prelive && pip wheel . --no-deps -w whl)
    # unzip whl/*.whl's hybrid_engine/_core*.so into /tmp/prelive/hybrid_engine/, then:
    PYTHONPATH=/tmp/prelive python scripts/engine_latency.py
    PYTHONPATH=. python scripts/engine_latency.py      # alternate the two, several times
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from hybrid_engine import EmbeddingCache, Encoder, HybridIndex
from hybrid_engine.evaluation import load_beir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).parents[1] / "../shared/data")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    dataset = load_beir(args.data / "beir" / "scifact", split="test")
    encoder = Encoder.load()
    engine = HybridIndex.build(dataset.corpus, encoder=encoder, embedding_cache=EmbeddingCache())
    queries = list(dataset.queries.values())[: args.queries]
    for query in queries:  # warm-up: numba kernels, ONNX Runtime
        engine.search([query], 10, num_threads=1)
    times = []
    for _ in range(args.rounds):
        for query in queries:
            start = time.perf_counter()
            engine.search([query], 10, num_threads=1)
            times.append(time.perf_counter() - start)
    print(f"{np.median(times) * 1000:.4f}")


if __name__ == "__main__":
    main()
