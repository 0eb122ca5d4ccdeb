"""Opening and serving a memory-mapped dense index (issue 14, memory and load): load time,
resident memory and recall@10 against the index's size on disk, per way of opening it.

Builds a ``DenseIndex`` over ``--n`` clustered random vectors of dimension 384
(``tests/dense_oracle.clustered``: the content does not matter for memory, the recall only
compares the ways of opening one graph) with the default parameters (cosine, M=16,
ef_construction=200, ef_search=256), saves it under ``--dir`` (kept, and reused when there),
with 2,000 query vectors and the brute-force top-10 of the first 200. Then for each way of
opening it (``mmap=True`` with the default ``verify``: the graph is searched in its memory
map; ``mmap=True, verify=True``: checked, read by hnswlib; ``mmap=False``) a fresh process
loads it, times the load, runs the 2,000 searches (one at a time, one thread, ``k=10``) and
reports VmRSS (after the load, after 20 searches, after all) and, after all, its file-backed
part RssFile (pages of the mapped files: clean page cache, which the kernel maps around each
fault and may drop) and its anonymous part RssAnon, over those before the load::

    PYTHONPATH=. python benchmarks/reports/mmap_dense.py [--n 253928] [--dir /tmp/mmap-dense]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.process_memory import LOAD_MODES, in_fresh_process, memory  # noqa: E402
from tests.dense_oracle import clustered, knn_float64, recall  # noqa: E402

DIM = 384
N_QUERIES = 2000
N_RECALL = 200
FEW = 20
"""RSS is also reported after this many queries."""


def serve(work: Path, mode: str) -> dict[str, Any]:
    """In this process: load ``work/index`` as ``mode`` says, then search the saved queries."""
    from hybrid_engine import DenseIndex

    queries = np.load(work / "queries.npy")
    truth = np.load(work / "truth.npy")
    DenseIndex.from_vectors(queries[:10]).search(queries[0], 10)  # numba, imports
    before = memory()
    start = time.perf_counter()
    index = DenseIndex.load(work / "index", **LOAD_MODES[mode])  # type: ignore[arg-type]
    load_s = time.perf_counter() - start
    loaded = memory()
    found = np.empty((len(queries), 10), dtype=np.int64)
    start = time.perf_counter()
    for i, query in enumerate(queries):
        found[i] = index.search(query, 10, num_threads=1).ids[0]
        if i + 1 == FEW:
            few = memory()
    search_s = time.perf_counter() - start
    served = memory()
    return {
        "load_ms": 1000 * load_s,
        "rss_after_load_mib": loaded["VmRSS"] - before["VmRSS"],
        f"rss_after_{FEW}_queries_mib": few["VmRSS"] - before["VmRSS"],
        "rss_after_queries_mib": served["VmRSS"] - before["VmRSS"],
        "file_backed_after_queries_mib": served["RssFile"] - before["RssFile"],
        "anonymous_after_queries_mib": served["RssAnon"] - before["RssAnon"],
        "queries_per_s": len(queries) / search_s,
        "recall_at_10": recall(found[:N_RECALL], truth),
    }


def build(work: Path, n: int) -> None:
    """Save the index, the queries and the brute-force truth under ``work``."""
    from hybrid_engine import DenseIndex

    vectors = clustered(n, DIM, seed=1)
    queries = clustered(N_QUERIES, DIM, seed=2)
    start = time.perf_counter()
    DenseIndex.from_vectors(vectors, num_threads=2).save(work / "index")
    print(f"built and saved {n} vectors in {time.perf_counter() - start:.0f} s", flush=True)
    truth = np.concatenate(
        [knn_float64(vectors, queries[i : i + 50], 10, "cosine") for i in range(0, N_RECALL, 50)]
    )
    np.save(work / "queries.npy", queries)
    np.save(work / "truth.npy", truth)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=253_928)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/mmap-dense"))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--serve", metavar="MODE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    work = args.dir / str(args.n)
    if args.serve:
        print(json.dumps(serve(work, args.serve)))
        return
    if not (work / "truth.npy").exists():
        work.mkdir(parents=True, exist_ok=True)
        build(work, args.n)
    disk = sum(f.stat().st_size for f in (work / "index").iterdir()) / 2**20
    rows = []
    for mode in LOAD_MODES:
        row = {"vectors": args.n, "disk_mib": disk, "mode": mode}
        row.update(
            in_fresh_process(
                [__file__, "--n", str(args.n), "--dir", str(args.dir), "--serve", mode]
            )
        )
        rows.append(row)
        print(
            f"{args.n:>8} vectors {disk:7.1f} MiB  {mode:<12} load {row['load_ms']:8.1f} ms  "
            f"RSS +{row['rss_after_load_mib']:6.1f} MiB after load, "
            f"+{row[f'rss_after_{FEW}_queries_mib']:6.1f} after {FEW} queries, "
            f"+{row['rss_after_queries_mib']:6.1f} after {N_QUERIES} "
            f"({row['file_backed_after_queries_mib']:.1f} file-backed, "
            f"{row['anonymous_after_queries_mib']:.1f} anonymous), "
            f"{row['queries_per_s']:.0f} q/s, recall@10 {row['recall_at_10']:.4f}",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
