"""What the sharded index's BM25 statistics move at a commit: every term's counts (the whole
exchange, what every commit did before) against the changed terms' (what a commit does now),
at 1, 4 and 8 shards over the scale corpus; and what a search moves and takes.

The 253,928 scale documents (``benchmarks/bench_common.load_scale_texts``), but for the last
1,000, are built into a BM25 sharded index on a local Ray cluster; a commit then adds those
1,000 and deletes 100 others. The bytes are those Ray carries for the statistics' calls,
measured as the pickled size of each call's arguments and answer on the coordinator (Ray
pickles them so): ``bm25_delta`` and ``prepare_delta`` for the commit, then ``bm25_counts``
and ``prepare`` of a whole exchange at the same state (``publish(full=True)``), each timed.
At ``--latency-shards`` (4) the script also searches ``--queries`` MS MARCO queries one per
call (k=10), on the generation the whole exchange prepared and then on one a delta prepared,
and reports p50/p95 and the bytes of a search's fan-out (no statistics move at query time in
either design)::

    PYTHONPATH=. python benchmarks/reports/sharded_statistics_report.py [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import ray

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared helpers
from bench_common import load_scale_texts, read_jsonl

from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.distributed import ShardedIndex
from hybrid_engine.distributed.cluster import ShardCalls

DATA = DEFAULT_DATASET.parent.parent
HELD_BACK = 1_000
DELETED = 100
STATISTICS = ("bm25_delta", "prepare_delta", "bm25_counts", "prepare")


@contextmanager
def counted() -> Iterator[dict[str, list[int]]]:
    """Bytes of every ``ShardCalls.gather`` call's arguments and answers, by method, while
    the block runs (on this process: the coordinator)."""
    seen: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    gather = ShardCalls.gather

    def recorded(self: ShardCalls, method: str, args: Any, **kwargs: Any) -> Any:
        answers, failures = gather(self, method, args, **kwargs)
        seen[method][0] += sum(len(pickle.dumps(a)) for a in args if a is not None)
        seen[method][1] += sum(len(pickle.dumps(a)) for a in answers if a is not None)
        return answers, failures

    ShardCalls.gather = recorded  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        ShardCalls.gather = gather  # type: ignore[method-assign]


def searched(index: ShardedIndex, queries: list[str]) -> dict[str, Any]:
    """p50 and p95 of ``queries`` one per call (k=10), and the bytes of a search's calls."""
    index.search(queries[:20], 10)
    ms = []
    with counted() as fan_out:
        for query in queries:
            begun = time.perf_counter()
            index.search(query, 10)
            ms.append((time.perf_counter() - begun) * 1000)
    return {
        "ms_p50": float(np.percentile(ms, 50)),
        "ms_p95": float(np.percentile(ms, 95)),
        "bytes_per_query": {
            method: [size / len(queries) for size in sizes] for method, sizes in fan_out.items()
        },
    }


def measure(texts: list[str], n_shards: int, queries: list[str] | None) -> dict[str, Any]:
    docs = [{"_id": f"s{i}", "text": text} for i, text in enumerate(texts)]
    with tempfile.TemporaryDirectory() as work:
        start = time.perf_counter()
        index = ShardedIndex.build(
            docs[:-HELD_BACK], Path(work) / "sharded", n_shards=n_shards,
            build_options={"retrievers": ["bm25"]}, batch_size=20_000,
        )  # fmt: skip
        report: dict[str, Any] = {"shards": n_shards, "build_s": time.perf_counter() - start}
        try:
            index.add(docs[-HELD_BACK:])
            index.delete([d["_id"] for d in docs[:DELETED]])
            writes = index._writes
            publish = writes.publish
            timed: dict[str, float] = {}

            def timed_publish(*, full: bool = False) -> None:
                begun = time.perf_counter()
                publish(full=full)
                timed["full" if full else "delta"] = time.perf_counter() - begun

            writes.publish = timed_publish  # type: ignore[method-assign]
            with counted() as delta:
                index.commit()
            with counted() as whole:
                writes.publish(full=True)
            report["commit_bytes_delta"] = {m: delta[m] for m in STATISTICS if m in delta}
            report["commit_bytes_whole"] = {m: whole[m] for m in STATISTICS if m in whole}
            report["bytes_delta"] = sum(sum(v) for v in report["commit_bytes_delta"].values())
            report["bytes_whole"] = sum(sum(v) for v in report["commit_bytes_whole"].values())
            report["publish_s_delta"] = timed["delta"]
            report["publish_s_whole"] = timed["full"]
            if queries:  # on the generation of the whole exchange, then of a delta
                report["search_whole"] = searched(index, queries)
                index.add([{"_id": "one-more", "text": "one more document"}])
                index.commit()
                report["search_delta"] = searched(index, queries)
        finally:
            index.close()
    print(json.dumps(report))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--shards", default="1,4,8")
    parser.add_argument("--latency-shards", type=int, default=4)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--limit", type=int, default=None, help="documents (default: all)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    texts = load_scale_texts(args.data)[: args.limit]
    rows = read_jsonl(args.data / "queries" / "msmarco-passage-dev-small.jsonl")
    queries = [row["text"].strip() for row in rows][: args.queries]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    reports = [
        measure(texts, n, queries if n == args.latency_shards else None)
        for n in (int(s) for s in args.shards.split(","))
    ]
    ray.shutdown()
    if args.json:
        args.json.write_text(json.dumps(reports, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
