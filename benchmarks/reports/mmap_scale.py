"""Opening and serving a memory-mapped index over the 253,928-document scale corpus (issue 14,
memory and load): load time and resident memory against the index's size on disk.

Builds a BM25 index over ``<data>/scale`` (gcide + wordnet + wikipedia_summaries_en) and over
its first 1/16 and 1/4, saves them, then for each saved index and each way of opening it
(``mmap=True`` with the default ``verify``, which reads no posting list; ``mmap=True,
verify=True``; ``mmap=False``) starts a fresh process that loads it, times the load, and runs
``--queries`` real web queries (msmarco-passage dev, one thread, ``k=10``). Each process
reports VmRSS, and its file-backed part RssFile (pages of the mapped files, which the kernel
may drop and read again), over its RSS before the load::

    PYTHONPATH=. python benchmarks/reports/mmap_scale.py [--data ../shared/data] [--queries 2000]
        [--json mmap.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.bench_common import load_scale_texts, read_jsonl  # noqa: E402
from benchmarks.process_memory import LOAD_MODES, in_fresh_process, memory  # noqa: E402

FRACTIONS = (16, 4, 1)
"""Indexes over the first 1/16, 1/4 and all of the scale corpus."""


def serve(path: Path, mode: str, queries: list[str]) -> dict[str, Any]:
    """In this process: load ``path`` as ``mode`` says, then search ``queries``."""
    from hybrid_engine import BM25Index

    BM25Index.load(path, **LOAD_MODES[mode]).search(
        ["warm up"], 10, num_threads=1
    )  # numba, imports
    before = memory()
    start = time.perf_counter()
    index = BM25Index.load(path, **LOAD_MODES[mode])
    load_s = time.perf_counter() - start
    loaded = memory()
    start = time.perf_counter()
    for i in range(0, len(queries), 100):
        index.search(queries[i : i + 100], 10, num_threads=1)
    search_s = time.perf_counter() - start
    served = memory()
    return {
        "load_ms": 1000 * load_s,
        "rss_after_load_mib": loaded["VmRSS"] - before["VmRSS"],
        "rss_after_queries_mib": served["VmRSS"] - before["VmRSS"],
        "file_backed_after_queries_mib": served["RssFile"] - before["RssFile"],
        "queries_per_s": len(queries) / search_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--serve", nargs=2, metavar=("PATH", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    records = read_jsonl(args.data / "queries" / "msmarco-passage-dev-small.jsonl")
    queries = [r["text"] for r in records][: args.queries]
    if args.serve:
        print(json.dumps(serve(Path(args.serve[0]), args.serve[1], queries)))
        return

    from hybrid_engine import BM25Index

    texts = load_scale_texts(args.data)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mmap-scale-") as tmp:
        for fraction in FRACTIONS:
            path = Path(tmp) / f"bm25-{fraction}"
            BM25Index.build(texts[: len(texts) // fraction]).save(path)
            disk = sum(f.stat().st_size for f in path.iterdir()) / 2**20
            for mode in LOAD_MODES:
                served = in_fresh_process(
                    [__file__, "--data", str(args.data), "--queries", str(args.queries),
                     "--serve", str(path), mode]
                )  # fmt: skip
                row = {
                    "documents": len(texts) // fraction,
                    "disk_mib": disk,
                    "mode": mode,
                    **served,
                }
                rows.append(row)
                print(
                    f"{row['documents']:>8} docs {disk:7.1f} MiB  {mode:<12} load "
                    f"{row['load_ms']:8.1f} ms  RSS +{row['rss_after_load_mib']:6.1f} MiB "
                    f"after load, +{row['rss_after_queries_mib']:6.1f} after "
                    f"{len(queries)} queries ({row['file_backed_after_queries_mib']:.1f} "
                    f"file-backed), {row['queries_per_s']:.0f} q/s",
                    flush=True,
                )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
