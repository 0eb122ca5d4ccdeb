"""Filtered dense search (``DenseIndex.search(..., allowed=mask)``): recall@k, hits and per-query
latency of each strategy at each selectivity, on the same HNSW graph.

Data: the 5,183 SciFact documents and its 300 test claims embedded by the default bi-encoder
(all-MiniLM-L6-v2, int8), read through the embedding cache (encoded once when missing)::

    PYTHONPATH=. python benchmarks/reports/bench_dense_filter.py

or ``--synthetic N`` (clustered random vectors, ``benchmarks/bench_common.py``), or two
``.npy`` files of float32 ``(n, dim)`` corpus and query embeddings. The index is built with
``exact_threshold=100`` so it has a graph (default ``m``, ``ef_construction``, ``ef_search``).

For each selectivity (``--selectivity``: the allowed fraction, a seeded random mask) and each
strategy, the script prints ``recall@k`` (mean over the queries of |found ∩ truth| / |truth|,
truth the brute-force float64 top-k over the allowed vectors), ``full_rows`` (fraction of the
queries with ``min(k, n_allowed)`` hits, all allowed) and ``ms`` (median latency of one-query
calls, one thread, after a warm-up). Strategies:

* ``ours``: ``search(allowed=)``, the cost model (``dense.filtered.plan``) picking exact over
  the allowed rows or the oversampled graph;
* ``oversample``: the same code with the cost model off (``GRAPH_ROWS_PER_LINK = 0``), so the
  oversampled graph runs whenever a list shorter than the index can hold ``k`` allowed hits;
* ``callback``: hnswlib's ``knn_query(filter=...)`` with ``k``, the same ``ef`` (a Python
  callable per visited node; a list lookup, the cheapest one), candidates rescored exactly,
  exact over the allowed rows when hnswlib finds fewer than ``k``
  (``benchmarks/bench_common.py``'s ``hnswlib_filter_search``).

``--calibrate`` prints instead the one-query latency of the graph for list sizes and of the
exact path for numbers of allowed rows, and the ``GRAPH_ROWS_PER_LINK`` that makes
``dense.filtered.graph_cost`` match them.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from hybrid_engine import DenseIndex, SearchResult
from hybrid_engine.dense import filtered
from hybrid_engine.dense import knn as _knn
from hybrid_engine.dense import vectors as _vectors
from hybrid_engine.dense.links import LinkGraph

K = 10
SELECTIVITIES = [0.001, 0.01, 0.1, 0.5]
Search = Callable[[np.ndarray, int], SearchResult]


def _scifact(data: Path, queries: int) -> tuple[np.ndarray, np.ndarray]:
    """(document embeddings, test claim embeddings) of SciFact, by the default bi-encoder."""
    from hybrid_engine import EmbeddingCache, Encoder

    root = data / "beir" / "scifact"
    with open(root / "corpus.jsonl", encoding="utf-8") as f:
        docs = [json.loads(line) for line in f if line.strip()]
    texts = [f"{d['title']} {d['text']}" if d.get("title") else d["text"] for d in docs]
    with open(root / "qrels" / "test.tsv", encoding="utf-8") as f:
        test = {row[0] for row in csv.reader(f, delimiter="\t")}
    with open(root / "queries.jsonl", encoding="utf-8") as f:
        claims = [q["text"] for q in map(json.loads, f) if q["_id"] in test]
    encoder, cache = Encoder.load(), EmbeddingCache()
    print(f"{encoder!r}: {len(texts)} documents, {len(claims[:queries])} test claims")
    return cache.encode(encoder, texts), cache.encode(encoder, claims[:queries])


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared helpers
from tests.dense_oracle import brute_force  # noqa: E402  (the recall oracle of the filter tests)


def _synthetic(n: int, n_queries: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    from bench_common import clustered_vectors

    return clustered_vectors(n, dim, seed=0), clustered_vectors(n_queries, dim, seed=1)


def _peer(index: DenseIndex, allowed: np.ndarray) -> Search:
    """hnswlib's ``filter=`` callback on the index's graph (``bench_common``)."""
    from bench_common import hnswlib_filter_search

    return hnswlib_filter_search(index, allowed)


def _graph(index: DenseIndex) -> LinkGraph:
    """The index's graph (a private attribute: this script times its walk bare)."""
    graph = index._store.graph
    if graph is None:
        raise SystemExit(f"{index!r} has no graph; give more than 100 documents")
    return graph


@contextmanager
def _cost_model_off() -> Iterator[None]:
    """The graph whenever ``filtered.plan`` can use it: its cost estimate set to zero."""
    saved = filtered.GRAPH_ROWS_PER_LINK
    filtered.GRAPH_ROWS_PER_LINK = 0.0
    try:
        yield
    finally:
        filtered.GRAPH_ROWS_PER_LINK = saved


def strategies(index: DenseIndex, allowed: np.ndarray) -> dict[str, Search]:
    def ours(queries: np.ndarray, k: int) -> SearchResult:
        return index.search(queries, k, num_threads=1, allowed=allowed)

    def oversample(queries: np.ndarray, k: int) -> SearchResult:
        with _cost_model_off():
            return ours(queries, k)

    return {"ours": ours, "oversample": oversample, "callback": _peer(index, allowed)}


def per_query_ms(search: Callable[[np.ndarray, int], object], queries: np.ndarray, k: int) -> float:
    """Median milliseconds of a one-query call over ``queries``, after a warm-up."""
    for query in queries[:3]:
        search(query, k)
    times = []
    for query in queries:
        start = time.perf_counter()
        search(query, k)
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def measure(
    index: DenseIndex, corpus: np.ndarray, queries: np.ndarray, args: argparse.Namespace
) -> list[dict[str, object]]:
    rng = np.random.default_rng(args.seed)
    rows: list[dict[str, object]] = []
    for s in args.selectivity:
        allowed = rng.random(len(corpus)) < s
        n_allowed = int(allowed.sum())
        expected = brute_force(corpus, queries, allowed, args.k)
        depth = min(args.k, n_allowed)
        for name, search in strategies(index, allowed).items():
            found = search(queries, args.k).ids
            hits = (found >= 0).sum(axis=1)
            assert allowed[found[found >= 0]].all(), f"{name} returned a masked document"
            recall = (
                float(
                    np.mean(
                        [
                            len(set(f) & set(t[:depth])) / depth
                            for f, t in zip(found, expected, strict=True)
                        ]
                    )
                )
                if depth
                else 1.0
            )
            ms = per_query_ms(search, queries[: args.latency_queries], args.k)
            rows.append(
                {
                    "selectivity": s,
                    "n_allowed": n_allowed,
                    "strategy": name,
                    f"recall@{args.k}": recall,
                    "full_rows": float(np.mean(hits == depth)),
                    "ms": ms,
                }
            )
            print(
                f"{s:>11.3%} {n_allowed:>9} {name:>10} {recall:>9.4f} "
                f"{rows[-1]['full_rows']:>9.3f} {ms:>8.3f}",
                flush=True,
            )
    return rows


def calibrate(index: DenseIndex, queries: np.ndarray, args: argparse.Namespace) -> None:
    """One-query latency of the graph by list size and of exact search by allowed rows."""
    graph, vectors = _graph(index), index.vectors
    matrix = _vectors.prepare(queries[: args.latency_queries], "queries", index.metric)
    norm = _vectors.max_norm(vectors)
    print(f"{'list':>7} {'ef':>6} {'graph_ms':>9}")
    graph_ms = {}
    for size in (10, 100, 256, 512, 1024, 2048):
        if size < len(vectors):
            graph_ms[size] = per_query_ms(
                lambda q, k, s=size: graph.knn_query(q, k=s, num_threads=1), matrix, args.k
            )
            print(f"{size:>7} {max(size, index.ef_search):>6} {graph_ms[size]:>9.3f}")
    print(f"{'allowed':>7} {'exact_ms':>9} {'us/row':>7}")
    rng = np.random.default_rng(args.seed)
    per_row = []
    for n_allowed in (300, 1000, 3000, 10_000, 30_000):
        if n_allowed < len(vectors):
            rows = np.sort(rng.choice(len(vectors), n_allowed, replace=False))

            def exact(q: np.ndarray, k: int, rows: np.ndarray = rows) -> SearchResult:
                out = SearchResult.empty(1, k)
                _knn.exact_search(vectors, q[None], out.ids, out.scores, norm, rows)
                return out

            ms = per_query_ms(exact, matrix, args.k)
            per_row.append(ms / n_allowed)
            print(f"{n_allowed:>7} {ms:>9.3f} {1e3 * ms / n_allowed:>7.3f}")
    row_ms = statistics.median(per_row)
    for size, ms in graph_ms.items():
        links = max(size, index.ef_search) * 2 * index.m
        print(
            f"list {size}: graph = {ms / row_ms:.0f} exact rows, {ms / row_ms / links:.2f} per link"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, help="(n, dim) float32 .npy")
    parser.add_argument("queries", nargs="?", type=Path, help="(n_queries, dim) float32 .npy")
    parser.add_argument("--synthetic", type=int, metavar="N", help="N clustered random vectors")
    parser.add_argument("--data", type=Path, help="shared data folder (SciFact)")
    parser.add_argument("--n-queries", type=int, default=300)
    parser.add_argument("--selectivity", type=float, nargs="+", default=SELECTIVITIES)
    parser.add_argument("--k", type=int, default=K)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--latency-queries", type=int, default=100)
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    if args.synthetic:
        corpus, queries = _synthetic(args.synthetic, args.n_queries, 384)
    elif args.corpus and args.queries:
        corpus = np.load(args.corpus, allow_pickle=False)
        queries = np.load(args.queries, allow_pickle=False)[: args.n_queries]
    else:
        default = Path(__file__).resolve().parents[3] / "shared" / "data"
        data = args.data or Path(os.environ.get("HYBRID_ENGINE_DATA", default))
        corpus, queries = _scifact(data, args.n_queries)
    start = time.perf_counter()
    index = DenseIndex.from_vectors(corpus, exact_threshold=100)
    print(f"{index!r}, built in {time.perf_counter() - start:.1f} s; k={args.k}")
    if args.calibrate:
        calibrate(index, queries, args)
        return
    print(
        f"{'selectivity':>11} {'n_allowed':>9} {'strategy':>10} {'recall@' + str(args.k):>9} "
        f"{'full_rows':>9} {'ms':>8}"
    )
    rows = measure(index, corpus, queries, args)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
