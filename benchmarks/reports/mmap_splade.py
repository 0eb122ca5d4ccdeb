"""Opening and serving a memory-mapped SPLADE index (issue 14, memory and load): load time and
resident memory of a large synthetic index, opened memory-mapped or read.

Encoding a large corpus with the SPLADE model takes hours on a few cores, and what a load costs
depends only on the index's shape, so the index is built with ``SpladeIndex.from_vectors`` from
random sparse vectors of SPLADE's shape: ``--docs`` documents of ~``--terms`` distinct terms
each over BERT's 30,522-term vocabulary, terms drawn Zipf-like (exponent 0.8: a few terms in
most documents, most in few), weights gamma-distributed; ids are positions. The index is saved,
then for each way of opening it (``mmap=True`` with the default ``verify``, which reads no
posting list; ``mmap=True, verify=True``; ``mmap=False``) a fresh process loads it, reports
VmRSS and its file-backed part RssFile over its RSS before the load, after the load and after
``--queries`` random query vectors of 20 terms (one batch of 100 at a time, one thread,
``k=10``), then loads it ``--loads - 1`` times more: the minimum load time is reported (the
machine's noise disturbs it less) with the first::

    PYTHONPATH=. python benchmarks/reports/mmap_splade.py [--docs 250000] [--terms 100]
        [--json splade.json]

The script uses the ``hybrid_engine`` on ``PYTHONPATH``, so the same command measures another
checkout (``PYTHONPATH=../other python benchmarks/reports/mmap_splade.py``).
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared helpers
from process_memory import LOAD_MODES, in_fresh_process, memory

VOCAB = 30_522
"""BERT's WordPiece vocabulary, SPLADE's."""
QUERY_TERMS = 20


class SyntheticEncoder:
    """The vocabulary and model hash of the synthetic index; it encodes no text (the queries
    are vectors)."""

    vocab_size = VOCAB
    model_hash = "synthetic-splade-shape"

    def encode(self, texts: Any, *, show_progress: bool = False) -> Any:
        raise NotImplementedError("the synthetic index is searched with query vectors")


def random_vectors(rng: np.random.Generator, n_rows: int, per_row: int) -> Any:
    """``n_rows`` CSR rows of about ``per_row`` distinct terms each (Zipf-like over the
    vocabulary; repeats drawn within a row are merged), ascending, float32 weights."""
    from hybrid_engine import SparseVectors

    ranks = np.arange(1, VOCAB + 1, dtype=np.float64)
    popularity = rng.permutation(1.0 / ranks**0.8)
    cumulative = np.cumsum(popularity / popularity.sum())
    drawn = round(per_row * 1.06)  # with the repeats merged, ~per_row terms remain
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), drawn)
    terms = np.minimum(np.searchsorted(cumulative, rng.random(n_rows * drawn)), VOCAB - 1)
    keys = np.unique(rows * VOCAB + terms)
    row_of, terms = np.divmod(keys, VOCAB)
    offsets = np.zeros(n_rows + 1, np.int64)
    np.cumsum(np.bincount(row_of, minlength=n_rows), out=offsets[1:])
    weights = rng.gamma(1.5, 0.6, len(keys)).astype(np.float32)
    return SparseVectors(offsets, terms.astype(np.int32), weights)


def serve(path: Path, mode: str, loads: int, n_queries: int) -> dict[str, Any]:
    """In this process: load ``path`` as ``mode`` says and search it, then time ``loads``
    loads. A tiny index loaded the same way first pays the imports and numba's compilation
    (so that no large array allocated and freed before the measurement moves glibc's mmap
    threshold, which would keep the freed memory in this process's RSS)."""
    from hybrid_engine import SpladeIndex

    encoder = SyntheticEncoder()
    queries = random_vectors(np.random.default_rng(1), n_queries, QUERY_TERMS)
    with tempfile.TemporaryDirectory(prefix="warm-") as tmp:
        tiny = random_vectors(np.random.default_rng(2), 64, QUERY_TERMS)
        SpladeIndex.from_vectors(tiny, encoder=encoder).save(Path(tmp) / "warm")
        warm = SpladeIndex.load(Path(tmp) / "warm", encoder=encoder, **LOAD_MODES[mode])
        warm.search(_rows(queries, 0, 1), 10, num_threads=1)
        del warm
    gc.collect()
    before = memory()
    start = time.perf_counter()
    index = SpladeIndex.load(path, encoder=encoder, **LOAD_MODES[mode])
    times = [time.perf_counter() - start]
    loaded = memory()
    start = time.perf_counter()
    for first in range(0, n_queries, 100):
        index.search(_rows(queries, first, min(first + 100, n_queries)), 10, num_threads=1)
    search_s = time.perf_counter() - start
    served = memory()
    del index
    for _ in range(loads - 1):
        gc.collect()
        start = time.perf_counter()
        SpladeIndex.load(path, encoder=encoder, **LOAD_MODES[mode])
        times.append(time.perf_counter() - start)
    return {
        "load_ms_min": 1000 * min(times),
        "load_ms_first": 1000 * times[0],
        "rss_after_load_mib": loaded["VmRSS"] - before["VmRSS"],
        "file_backed_after_load_mib": loaded["RssFile"] - before["RssFile"],
        "rss_after_queries_mib": served["VmRSS"] - before["VmRSS"],
        "file_backed_after_queries_mib": served["RssFile"] - before["RssFile"],
        "queries_per_s": n_queries / search_s,
    }


def _rows(vectors: Any, first: int, stop: int) -> Any:
    """Rows ``first .. stop - 1`` of CSR ``vectors``."""
    from hybrid_engine import SparseVectors

    offsets = vectors.offsets[first : stop + 1]
    span = slice(offsets[0], offsets[-1])
    return SparseVectors(offsets - offsets[0], vectors.terms[span], vectors.weights[span])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=250_000)
    parser.add_argument("--terms", type=int, default=100)
    parser.add_argument("--loads", type=int, default=7)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--serve", nargs=2, metavar=("PATH", "MODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        served = serve(Path(args.serve[0]), args.serve[1], args.loads, args.queries)
        print(json.dumps(served))
        return

    from hybrid_engine import SpladeIndex

    vectors = random_vectors(np.random.default_rng(0), args.docs, args.terms)
    rows = []
    with tempfile.TemporaryDirectory(prefix="mmap-splade-") as tmp:
        path = Path(tmp) / "splade"
        start = time.perf_counter()
        index = SpladeIndex.from_vectors(vectors, encoder=SyntheticEncoder())
        index.save(path)
        postings = index.num_postings
        del index, vectors
        disk = sum(f.stat().st_size for f in path.iterdir()) / 2**20
        print(
            f"{args.docs} docs, {postings} postings ({postings / args.docs:.1f} per doc), "
            f"{disk:.1f} MiB on disk, built and saved in {time.perf_counter() - start:.0f} s",
            flush=True,
        )
        for mode in LOAD_MODES:
            served = in_fresh_process(
                [__file__, "--loads", str(args.loads), "--queries", str(args.queries),
                 "--serve", str(path), mode]
            )  # fmt: skip
            row = {"documents": args.docs, "postings": postings, "disk_mib": disk, "mode": mode}
            row.update(served)
            rows.append(row)
            print(
                f"{mode:<12} load {row['load_ms_min']:8.1f} ms (min of {args.loads}; first "
                f"{row['load_ms_first']:.1f})  RSS +{row['rss_after_load_mib']:6.1f} MiB after "
                f"load ({row['file_backed_after_load_mib']:.1f} file-backed), "
                f"+{row['rss_after_queries_mib']:6.1f} after {args.queries} queries "
                f"({row['file_backed_after_queries_mib']:.1f} file-backed), "
                f"{row['queries_per_s']:.0f} q/s",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
