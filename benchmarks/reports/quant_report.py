"""Quantized dense search side by side: recall@10 against exact float32, one-query latency,
build time and index bytes of every side of ``benchmarks/dense_peers.py`` on the same vectors,
in one run; prints JSON.

The vectors are real: the first ``--n-docs`` of the 253,928 cached scale vectors
(``embed_scale.py --docs all``), or for ``--n-docs`` above that the derived corpus of
``scale_corpus.py`` (generated when absent). The queries are ``--queries`` MS MARCO query
vectors (the seeded sample of ``scale_corpus.query_sample``), their truth the exact float32
top-10 by inner product. Each side is built (``BUILD_THREADS`` = 2 threads), saved once
(``index_bytes``: the file or folder it writes), then searched one query per call at each of
its settings (``ef``, and ``oversample`` for the rescoring sides): ``recall_at_10``,
``p50_ms``, ``p95_ms`` over the same queries, after 10 warm-up calls. Sides are built one at
a time and dropped before the next.

``--rss``: for each side, the saved index is loaded again in a fresh process, which runs the
queries at the side's middle setting and reports the resident memory the load and the
queries added (``VmRSS``, and its file-backed part ``RssFile``: memory-mapped pages), MiB;
the engine's side first warms its numba kernels on a small index, saved and loaded the
same way, and reports that apart
(``jit_mib``).

    PYTHONPATH=. python benchmarks/reports/quant_report.py --n-docs 253928 \\
        --json runs/quant-254k.json
    PYTHONPATH=. python benchmarks/reports/quant_report.py --n-docs 1000000 \\
        --sides hnswlib_f32 usearch_b1
    PYTHONPATH=. python benchmarks/reports/quant_report.py --n-docs 1000000 \\
        --sides ours_binary ours_int8
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared helpers
import dense_peers as peers
from process_memory import in_fresh_process, memory
from scale_corpus import (
    QUERY_SAMPLE,
    K,
    derived,
    exact_top_k,
    in_chunks,
    query_sample,
    query_vectors,
    real_vectors,
    scale_dir,
)


def data(n_docs: int, n_queries: int) -> tuple[np.ndarray, Path, np.ndarray, np.ndarray]:
    """(vectors memmap, its .npy file, query vectors, their exact top-10 ids)."""
    real = real_vectors()
    if n_docs <= len(real):
        path = scale_dir() / Path(real.filename).name
        vectors = real[:n_docs]
        rows = query_sample(len(query_vectors()))[:n_queries]
        truth, _ = exact_top_k(in_chunks(vectors), query_vectors()[rows], K)
    else:
        corpus = derived(n_docs, quiet=False)
        path = corpus.folder / "vectors.npy"
        vectors = corpus.vectors
        rows, truth = corpus.gt_queries[:n_queries], corpus.gt_ids[:n_queries]
    return vectors, path, np.ascontiguousarray(query_vectors()[rows]), truth


def side_rows(side: peers.Side, queries: np.ndarray, truth: np.ndarray) -> list[dict[str, Any]]:
    """One row per setting: recall@10 and per-call latency percentiles."""
    rows = []
    for setting in side.settings:
        ids, seconds = peers.run_setting(side, setting, queries, K)
        rows.append(
            {
                "setting": setting,
                "recall_at_10": round(peers.recall_at_k(ids, truth), 4),
                "p50_ms": round(1e3 * float(np.percentile(seconds, 50)), 4),
                "p95_ms": round(1e3 * float(np.percentile(seconds, 95)), 4),
            }
        )
        print(f"  {side.name} {setting} {rows[-1]}", file=sys.stderr, flush=True)
    return rows


def rss_args(side: peers.Side, vectors_path: Path, n_docs: int, queries_path: Path) -> list[str]:
    """The command line of the fresh process that measures ``side``'s resident memory."""
    middle = side.settings[len(side.settings) // 2]
    return [
        str(Path(__file__).resolve()),
        "--rss-of",
        side.name,
        str(side.saved),
        str(vectors_path),
        str(n_docs),
        str(queries_path),
        json.dumps(middle),
    ]


def measure_rss(argv: list[str]) -> None:
    """The fresh process: load one saved side, run the queries, print what RSS grew by."""
    name, saved, vectors_path, n_docs, queries_path, setting = argv
    vectors = np.load(vectors_path, mmap_mode="r")[: int(n_docs)]
    queries = np.load(queries_path)
    import faiss  # noqa: F401 - the libraries' own memory is not the index's
    import hnswlib  # noqa: F401
    import usearch.index  # noqa: F401

    from hybrid_engine import DenseIndex

    jit = 0.0
    before = memory()
    if name.startswith("ours"):
        warm = np.random.default_rng(0).standard_normal((6000, vectors.shape[1]))
        quantization = None if name == "ours_f32" else name[5:]
        small = DenseIndex.from_vectors(
            warm, exact_threshold=0, num_threads=1, quantization=quantization
        )
        with tempfile.TemporaryDirectory() as tmp:  # loaded as the measured one is: mmap
            small.save(Path(tmp) / "warm")
            loaded_small = DenseIndex.load(Path(tmp) / "warm", mmap=True)
            loaded_small.search(warm[:1].astype(np.float32), K, num_threads=1)
            del small, loaded_small
        jit = memory()["VmRSS"] - before["VmRSS"]
        before = memory()
        side = peers.load_ours(name, Path(saved))
    else:
        side = peers.load_peer(name, Path(saved), vectors)
    loaded = memory()
    peers.run_setting(side, json.loads(setting), queries, K)
    after = memory()
    print(
        json.dumps(
            {
                "jit_mib": round(jit, 1),
                "load_mib": round(loaded["VmRSS"] - before["VmRSS"], 1),
                "load_and_queries_mib": round(after["VmRSS"] - before["VmRSS"], 1),
                "file_backed_mib": round(after["RssFile"] - before["RssFile"], 1),
                "setting": json.loads(setting),
            }
        )
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--rss-of":
        measure_rss(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-docs", type=int, default=253_928)
    parser.add_argument("--queries", type=int, default=QUERY_SAMPLE)
    parser.add_argument("--sides", nargs="+", default=[*peers.PEERS, "ours"])
    parser.add_argument("--rss", action="store_true", help="resident memory, fresh processes")
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args()
    vectors, vectors_path, queries, truth = data(args.n_docs, args.queries)
    report: dict[str, Any] = {
        "n_docs": len(vectors),
        "dim": int(vectors.shape[1]),
        "queries": len(queries),
        "k": K,
        "build_threads": peers.BUILD_THREADS,
        "vectors": str(vectors_path),
        "sides": [],
    }
    in_ram = np.ascontiguousarray(vectors, dtype=np.float32)
    with tempfile.TemporaryDirectory(prefix="quant-report-") as tmp:
        queries_path = Path(tmp) / "queries.npy"
        np.save(queries_path, queries)
        for name in args.sides:
            start = time.perf_counter()
            keep = Path(tmp) / "saved" if args.rss else None
            if keep is not None:
                keep.mkdir(exist_ok=True)
            for side in peers.build_sides(in_ram, [name], keep_dir=keep):
                print(f"{side.name}: built in {side.build_s:.1f}s", file=sys.stderr, flush=True)
                entry: dict[str, Any] = {
                    "side": side.name,
                    "build_s": round(side.build_s, 2),
                    "index_bytes": side.index_bytes,
                    "index_bytes_per_doc": round(side.index_bytes / len(vectors), 1),
                    "rescore_bytes": side.rescore_bytes,
                    "rows": side_rows(side, queries, truth),
                }
                if args.rss:
                    entry["rss"] = in_fresh_process(
                        rss_args(side, vectors_path, len(vectors), queries_path)
                    )
                    print(f"  rss {entry['rss']}", file=sys.stderr, flush=True)
                report["sides"].append(entry)
            print(f"{name}: {time.perf_counter() - start:.0f}s", file=sys.stderr, flush=True)
            if keep is not None:
                for path in keep.iterdir():
                    peers.remove(path)
    text = json.dumps(report, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
