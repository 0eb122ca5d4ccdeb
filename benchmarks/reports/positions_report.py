"""What positions (``BM25Index.build(positions=True)``, for phrase queries) cost: bytes per
posting and per token on disk, build time, and the latency of a quoted query against the same
query unquoted.

Over the 253,928 scale documents (``benchmarks/bench_common.load_scale_texts``) and SciFact's
5,183: each index built ``--rounds`` times without and with positions, alternating (the machine
is shared: the ratio of the medians is the figure), saved once each to measure the files. Then
one query per call, one thread, over ``--queries`` MS MARCO queries: each as it is, and with
its first two words quoted (a user quoting part of a query); and as many two-to-three-word
runs cut from the documents, quoted alone (each matches at least one document)::

    PYTHONPATH=. python benchmarks/reports/positions_report.py [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared helpers
from bench_common import load_scale_texts, read_jsonl

from hybrid_engine import BM25Index
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.evaluation import load_beir

DATA = DEFAULT_DATASET.parent.parent


def _files(path: Path) -> dict[str, int]:
    return {f.name: f.stat().st_size for f in path.iterdir()}


def _build_times(texts: list[str], rounds: int) -> tuple[list[float], list[float]]:
    plain, positions = [], []
    BM25Index.build(texts[:2000], positions=True)  # numba and allocator warm-up
    for _ in range(rounds):
        for store, flag in ((plain, False), (positions, True)):
            start = time.perf_counter()
            BM25Index.build(texts, positions=flag)
            store.append(time.perf_counter() - start)
    return plain, positions


def _latencies(index: BM25Index, queries: list[str]) -> np.ndarray:
    index.search(queries[:20], 10, num_threads=1)  # warm-up
    out = []
    for query in queries:
        start = time.perf_counter()
        index.search(query, 10, num_threads=1)
        out.append((time.perf_counter() - start) * 1000)
    return np.array(out)


def _quoted_first_two(query: str) -> str:
    words = query.split()
    return f'"{" ".join(words[:2])}" {" ".join(words[2:])}'.strip()


def _runs(texts: list[str], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        words = rng.choice(texts).split()
        if len(words) >= 3:
            start = rng.randrange(len(words) - 2)
            out.append('"' + " ".join(words[start : start + rng.randint(2, 3)]) + '"')
    return out


def measure(name: str, texts: list[str], rounds: int, queries: list[str]) -> dict[str, Any]:
    plain_s, positions_s = _build_times(texts, rounds)
    report: dict[str, Any] = {
        "documents": len(texts),
        "build_s_plain": plain_s,
        "build_s_positions": positions_s,
        "build_ratio": statistics.median(positions_s) / statistics.median(plain_s),
    }
    with tempfile.TemporaryDirectory() as work:
        plain = BM25Index.build(texts)
        index = BM25Index.build(texts, positions=True)
        plain.save(Path(work) / "plain")
        index.save(Path(work) / "positions")
        sizes = _files(Path(work) / "positions")
        total_plain = sum(_files(Path(work) / "plain").values())
        tokens = int(index.doc_lengths.sum())
        report.update(
            postings=index.num_postings,
            tokens=tokens,
            postings_bytes_per_posting=sizes["postings.npy"] / index.num_postings,
            positions_bytes_per_posting=sizes["positions.npy"] / index.num_postings,
            positions_bytes_per_token=sizes["positions.npy"] / tokens,
            disk_bytes_per_doc_plain=total_plain / len(texts),
            disk_bytes_per_doc_positions=sum(sizes.values()) / len(texts),
        )
    sets = {
        "query": queries,
        "first two words quoted": [_quoted_first_two(q) for q in queries],
        "document run quoted": _runs(texts, len(queries), seed=0),
    }
    for label, batch in sets.items():
        ms = _latencies(index, batch)
        report[f"latency_ms {label}"] = {
            "p50": float(np.percentile(ms, 50)),
            "p95": float(np.percentile(ms, 95)),
        }
    print(f"## {name}: {len(texts):,} documents, {report['postings']:,} postings")
    for key, value in report.items():
        if key not in ("documents", "postings"):
            print(f"{key}: {value}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = read_jsonl(args.data / "queries" / "msmarco-passage-dev-small.jsonl")
    queries = [row["text"].strip() for row in rows][: args.queries]
    scifact = load_beir(args.data / "beir" / "scifact").corpus
    report = {
        "scifact": measure(
            "scifact", [d["title"] + " " + d["text"] for d in scifact], args.rounds, queries
        ),
        "scale-254k": measure("scale-254k", load_scale_texts(args.data), args.rounds, queries),
    }
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
