"""Filters inside every leg against brute force on SciFact with synthetic metadata.

Each document gets ``{"bucket": b}`` with ``b`` a seeded permutation of its positions, so the
filter ``{"bucket": {"$lt": s * n}}`` passes a share ``s`` of them (0.1%, 1%, 10%, 50%). For
the test queries, per leg:

* BM25 and SPLADE: the filtered top 10 against brute force (the unfiltered ranking of every
  document, matching ones kept, cut to 10): the share of queries whose ids and scores are
  identical;
* dense: recall@10 against exact search over the matching vectors (float64);
* every leg: the share of queries with 10 hits (all match >= 10 documents from 1% up), and
  the median milliseconds of one filtered query per call.

Usage: ``PYTHONPATH=. python benchmarks/reports/filter_report.py [--data ../shared/data]
[--out report.json]``.
Needs the prepared bi-encoder and SPLADE models (SPLADE encodes the corpus: minutes).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from hybrid_engine import EmbeddingCache, Filter, HybridIndex
from hybrid_engine.evaluation import load_beir

SELECTIVITIES = (0.001, 0.01, 0.1, 0.5)
K = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    dataset = load_beir(args.data / "beir" / "scifact", split="test")
    n = len(dataset.corpus)
    buckets = np.random.default_rng(0).permutation(n)
    corpus = [
        {**doc, "metadata": {"bucket": int(b)}}
        for doc, b in zip(dataset.corpus, buckets, strict=True)
    ]
    queries = list(dataset.queries.values())[: args.queries]
    tick = time.perf_counter()
    engine = HybridIndex.build(
        corpus,
        retrievers=("bm25", "dense", "splade"),
        embedding_cache=EmbeddingCache(),
        show_progress=True,
    )
    print(f"built in {time.perf_counter() - tick:.0f} s: {engine}")
    state = engine._state
    snapshot = state.snapshot
    vectors = state.encoder.encode(queries)
    sparse = state.splade_encoder.encode(queries)
    everything = list(snapshot.live)
    full = {
        "bm25": snapshot.search_bm25(queries, n, 1, everything),
        "splade": snapshot.search_splade(sparse, n, 1, everything),
    }
    exact = snapshot.vectors(np.arange(n)).astype(np.float64) @ vectors.astype(np.float64).T
    report = []
    for share in SELECTIVITIES:
        where = Filter.compile({"bucket": {"$lt": max(1, int(share * n))}})
        masks = snapshot.allowed(where)
        allowed = np.concatenate(masks)
        row = {"selectivity": share, "matching": int(allowed.sum())}
        found = {
            "bm25": snapshot.search_bm25(queries, K, 1, masks),
            "splade": snapshot.search_splade(sparse, K, 1, masks),
            "dense": snapshot.search_dense(vectors, K, 1, masks),
        }
        for leg in ("bm25", "splade"):
            row[f"{leg}_identical"] = _identical(found[leg], full[leg], allowed)
        recalls = []
        for q in range(len(queries)):
            truth = np.argsort(-np.where(allowed, exact[:, q], -np.inf), kind="stable")
            truth = truth[: min(K, row["matching"])]
            got = found["dense"].ids[q]
            recalls.append(len(set(got[got >= 0]) & set(truth)) / max(1, len(truth)))
        row["dense_recall_at_10"] = float(np.mean(recalls))
        for leg, result in found.items():
            row[f"{leg}_full_rows"] = float(
                np.mean((result.ids >= 0).sum(axis=1) == min(K, row["matching"]))
            )
        row.update(_latencies(snapshot, queries, vectors, sparse, masks))
        report.append(row)
        print(json.dumps(row))
    if args.out:
        args.out.write_text(json.dumps(report, indent=1))


def _identical(found, full, allowed: np.ndarray) -> float:  # type: ignore[no-untyped-def]
    """Share of rows of ``found`` equal (ids and scores) to brute force over ``full``."""
    same = 0
    for row in range(len(found.ids)):
        ids, scores = full.ids[row], full.scores[row]
        keep = (ids >= 0) & allowed[np.maximum(ids, 0)]
        want_ids, want_scores = ids[keep][:K], scores[keep][:K]
        got = found.ids[row] >= 0
        same += np.array_equal(found.ids[row][got], want_ids) and np.array_equal(
            found.scores[row][got], want_scores
        )
    return same / len(found.ids)


def _latencies(snapshot, queries, vectors, sparse, masks) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Median ms of one filtered query per call, per leg."""
    from hybrid_engine.result import SparseVectors

    times: dict[str, list[float]] = {"bm25": [], "dense": [], "splade": []}
    for q in range(len(queries)):
        start, stop = sparse.offsets[q], sparse.offsets[q + 1]
        offsets = np.array([0, stop - start], np.int64)
        one = SparseVectors(offsets, sparse.terms[start:stop], sparse.weights[start:stop])
        calls = {
            "bm25": (snapshot.search_bm25, [queries[q]]),
            "dense": (snapshot.search_dense, vectors[q : q + 1]),
            "splade": (snapshot.search_splade, one),
        }
        for leg, (search, query) in calls.items():
            tick = time.perf_counter()
            search(query, K, 1, masks)
            times[leg].append((time.perf_counter() - tick) * 1000)
    return {f"{leg}_p50_ms": float(np.median(t)) for leg, t in times.items()}


if __name__ == "__main__":
    main()
