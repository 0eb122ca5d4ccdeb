"""Recall@k and per-query latency of ``DenseIndex``'s HNSW path against its exact path.

Give a corpus of embeddings and queries embedded by the same model, each a ``.npy`` file of a
float32 ``(n, dim)`` array (e.g. MiniLM embeddings of >= 100k documents and of real queries)::

    PYTHONPATH=. python benchmarks/reports/bench_dense_recall.py corpus.npy queries.npy

or ``--synthetic N`` for ``N`` clustered random vectors (``benchmarks/bench_common.py``'s
``clustered_vectors``, 384 dimensions; queries from the same mixture, another seed).

For each corpus size (``--sizes``: prefixes of the corpus; default the whole corpus) the script
builds the index through the graph (``DenseIndex.from_vectors`` with ``exact_threshold=0`` and
the default ``m``, ``ef_construction``), takes the exact top-k of every query
(``search(..., exact=True)``) as the reference, then for every ``--ef`` value prints

* ``recall@k``: mean over the queries of |HNSW top-k ∩ exact top-k| / k;
* ``hnsw_ms`` and ``exact_ms``: median per-query latency of one-query ``search`` calls (the
  first ``--latency-queries`` queries, one thread, after a warm-up), HNSW and exact.

``exact_ms`` against ``hnsw_ms`` across sizes shows where the graph starts to pay
(``DEFAULT_EXACT_THRESHOLD``); the ``recall@k`` column, the smallest ef that reaches 0.99
(``DEFAULT_EF_SEARCH``). ``--json`` writes every row to a file as well.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine import DenseIndex


def _per_query_ms(index: DenseIndex, queries: np.ndarray, k: int, exact: bool) -> float:
    """Median milliseconds of a one-query ``search`` call over ``queries``."""
    for query in queries[:5]:
        index.search(query, k, exact=exact, num_threads=1)
    times = []
    for query in queries:
        start = time.perf_counter()
        index.search(query, k, exact=exact, num_threads=1)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def _recall(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean over queries of |found ∩ truth| / k."""
    return float(
        np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth, strict=True)])
    )


def measure(
    corpus: np.ndarray, queries: np.ndarray, args: argparse.Namespace, size: int
) -> list[dict[str, Any]]:
    """One row per ef value for the first ``size`` corpus vectors."""
    start = time.perf_counter()
    index = DenseIndex.from_vectors(
        corpus[:size], metric=args.metric, exact_threshold=0, num_threads=args.threads
    )
    build_s = time.perf_counter() - start
    truth = index.search(queries, args.k, exact=True).ids
    latency = queries[: args.latency_queries]
    exact_ms = _per_query_ms(index, latency, args.k, exact=True)
    rows = []
    for ef in args.ef:
        index.ef_search = ef
        found = index.search(queries, args.k, num_threads=args.threads).ids
        rows.append(
            {
                "n": size,
                "dim": index.dim,
                "ef_search": ef,
                f"recall@{args.k}": _recall(found, truth),
                "hnsw_ms": _per_query_ms(index, latency, args.k, exact=False),
                "exact_ms": exact_ms,
                "build_s": build_s,
            }
        )
        print(
            f"{size:>9} {ef:>6} {rows[-1][f'recall@{args.k}']:>10.4f} "
            f"{rows[-1]['hnsw_ms']:>9.3f} {exact_ms:>9.3f} {build_s:>8.1f}",
            flush=True,
        )
    return rows


def _synthetic(n: int, n_queries: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench_common import clustered_vectors

    return clustered_vectors(n, dim, seed=0), clustered_vectors(n_queries, dim, seed=1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, help="(n, dim) float32 .npy")
    parser.add_argument("queries", nargs="?", type=Path, help="(n_queries, dim) float32 .npy")
    parser.add_argument("--synthetic", type=int, metavar="N", help="N clustered random vectors")
    parser.add_argument("--synthetic-queries", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=384, help="of synthetic vectors")
    parser.add_argument("--sizes", type=int, nargs="+", help="corpus prefixes to index")
    parser.add_argument("--ef", type=int, nargs="+", default=[16, 32, 64, 128, 256, 512])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--metric", default="cosine", choices=["cosine", "ip"])
    parser.add_argument("--threads", type=int, default=None, help="graph build and batches")
    parser.add_argument("--latency-queries", type=int, default=200)
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    if args.synthetic:
        corpus, queries = _synthetic(args.synthetic, args.synthetic_queries, args.dim)
    elif args.corpus and args.queries:
        corpus = np.load(args.corpus, mmap_mode="r", allow_pickle=False)
        queries = np.load(args.queries, allow_pickle=False)
    else:
        parser.error("give corpus.npy and queries.npy, or --synthetic N")
    print(f"corpus {corpus.shape}, queries {queries.shape}, k={args.k}, metric={args.metric}")
    print(
        f"{'n':>9} {'ef':>6} {'recall@' + str(args.k):>10} {'hnsw_ms':>9} {'exact_ms':>9} "
        f"{'build_s':>8}"
    )
    rows = []
    for size in args.sizes or [len(corpus)]:
        rows.extend(measure(corpus, queries, args, min(size, len(corpus))))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
