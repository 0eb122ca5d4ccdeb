"""Resident memory of a hybrid engine under a long search load (issue 14, memory and load).

Builds the default hybrid (BM25 + int8 dense) over SciFact with a synthetic ``bucket`` field
per document, then runs ``--searches`` queries from ``--threads`` threads: each call is one
``HybridIndex.search`` of ``--batch`` test queries with their precomputed query vectors (the
bi-encoder is not the subject here), alternately without a filter and with
``{"bucket": {"$lt": 10%}}``. With ``--reranker MODEL`` every ``--rerank-every``-th call also
reranks its top 30 (``rerank=30``; a model the gate refused is not run, see
docs/reranking.md, so pass one prepared with no validation record or an accepted one).

The process's RSS (``/proc/self/status`` VmRSS) is sampled after warm-up and then every
``--sample-every`` searches; the output gives start, peak and end, and the growth per 100k
searches fitted over the second half (a leak shows as a steady slope)::

    PYTHONPATH=. python benchmarks/reports/soak.py [--searches 1000000] [--threads 8] [--batch 50]
        [--reranker MODEL --rerank-every 200] [--json soak.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np

from hybrid_engine import CrossEncoder, EmbeddingCache, Encoder, HybridIndex
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.errors import RerankerRefusedWarning
from hybrid_engine.evaluation import load_beir
from hybrid_engine.evaluation.runner import documents_with_text

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared helpers
from process_memory import memory


def rss_mib() -> float:
    """This process's resident set size, MiB (``process_memory.memory``'s ``VmRSS``)."""
    return memory()["VmRSS"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--searches", type=int, default=1_000_000, help="queries in all")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--batch", type=int, default=50, help="queries per search call")
    parser.add_argument("--sample-every", type=int, default=20_000)
    parser.add_argument("--reranker", default=None)
    parser.add_argument("--rerank-every", type=int, default=200, help="calls per reranked call")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    dataset = load_beir(args.data)
    corpus = documents_with_text(dataset)
    buckets = np.random.default_rng(0).permutation(len(corpus))
    corpus = [{**d, "metadata": {"bucket": int(b)}} for d, b in zip(corpus, buckets, strict=True)]
    encoder = Encoder.load(variant="int8", num_threads=1)
    engine = HybridIndex.build(corpus, encoder=encoder, embedding_cache=EmbeddingCache())
    if args.reranker:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RerankerRefusedWarning)  # it would never run
            engine = engine.with_reranker(CrossEncoder.load(args.reranker, num_threads=1))
    queries = list(dataset.queries.values())
    vectors = encoder.encode(queries)
    where = {"bucket": {"$lt": len(corpus) // 10}}

    done = 0
    lock = threading.Lock()
    samples: list[tuple[int, float]] = []
    calls = -(-args.searches // args.batch)
    next_call = iter(range(calls))

    def work() -> None:
        nonlocal done
        while True:
            with lock:
                call = next(next_call, None)
            if call is None:
                return
            start = (call * args.batch) % (len(queries) - args.batch)
            rows = slice(start, start + args.batch)
            rerank = 30 if args.reranker and call % args.rerank_every == 0 else None
            engine.search(
                queries[rows],
                10,
                query_vectors=vectors[rows],
                filter=where if call % 2 else None,
                rerank=rerank,
                num_threads=1,
            )
            with lock:
                before = done // args.sample_every
                done += args.batch
                if done // args.sample_every > before:
                    samples.append((done, rss_mib()))

    # Warm-up: every path once (numba kernels compiled, arenas grown), then the first sample.
    engine.search(queries[:50], 10, query_vectors=vectors[:50], filter=where)
    engine.search(queries[:50], 10, query_vectors=vectors[:50])
    samples.append((0, rss_mib()))
    tick = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - tick
    samples.append((done, rss_mib()))
    counts = np.array([s[0] for s in samples], float)
    rss = np.array([s[1] for s in samples])
    half = counts >= counts[-1] / 2
    slope = float(np.polyfit(counts[half], rss[half], 1)[0] * 100_000) if half.sum() > 1 else 0.0
    report = {
        "searches": done,
        "threads": args.threads,
        "batch": args.batch,
        "reranked_calls": calls // args.rerank_every + 1 if args.reranker else 0,
        "wall_s": round(wall, 1),
        "rss_start_mib": round(float(rss[0]), 1),
        "rss_peak_mib": round(float(rss.max()), 1),
        "rss_end_mib": round(float(rss[-1]), 1),
        "growth_mib_per_100k_second_half": round(slope, 3),
        "samples": [(int(c), round(float(r), 1)) for c, r in zip(counts, rss, strict=True)],
    }
    print(json.dumps({k: v for k, v in report.items() if k != "samples"}))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
