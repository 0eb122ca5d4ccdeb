"""Stored text, packed against compressed (issue 25, item 2): bytes per document on disk of a
segment's texts and titles, and the time to read ten hits' texts and titles.

Reads the documents as the live engine does (``LiveDocuments.from_documents``: the indexed
text is title, a space and text), saves their texts and titles as a segment would, packed
(segment format 1) and compressed (``CompressedStrings``, with and without a trained
dictionary), in ``.npy`` files, and reports their sizes per document. Then reads the saved
arrays memory-mapped, as ``HybridIndex.load(mmap=True)`` does, and times ``--reads`` reads
of ten random hits' texts and titles (``take``, one thread, seeded positions; a fresh store
per layout, so the decompressed-block cache starts empty), each read again at once (from the
cache of compressed stores). Prints JSON::

    PYTHONPATH=. python benchmarks/reports/text_compression_report.py [--data ../shared/data] \\
        [--reads 2000]
    PYTHONPATH=. python benchmarks/reports/text_compression_report.py \\
        --corpus ../shared/data/beir/scifact/corpus.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from benchmarks.bench_common import SCALE_PARTS, read_jsonl  # noqa: E402
from hybrid_engine.compressed import CompressedStrings  # noqa: E402
from hybrid_engine.live.documents import LiveDocuments  # noqa: E402
from hybrid_engine.packed import PackedStrings  # noqa: E402

HITS = 10
LAYOUTS: dict[str, Callable[[list[str]], PackedStrings | CompressedStrings]] = {
    "packed": PackedStrings.from_strings,
    "compressed, no dictionary": lambda s: CompressedStrings.from_strings(s, dictionary=False),
    "compressed": CompressedStrings.from_strings,
}


def _documents(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.corpus is not None:
        return list(read_jsonl(args.corpus))
    docs: list[dict[str, Any]] = []
    for part in SCALE_PARTS:
        docs.extend(read_jsonl(args.data / "scale" / part / "corpus.jsonl.gz"))
    return docs


def _saved(store: PackedStrings | CompressedStrings, folder: Path, prefix: str) -> int:
    """Save ``store``'s arrays under ``folder``; their bytes on disk."""
    total = 0
    for name, array in store.arrays(prefix).items():
        np.save(folder / f"{name}.npy", array, allow_pickle=False)
        total += (folder / f"{name}.npy").stat().st_size
    return total


def _mapped(
    layout: str, folder: Path, count: int, prefix: str
) -> PackedStrings | CompressedStrings:
    """The store saved under ``folder``, its arrays memory-mapped."""
    arrays = {p.stem: np.load(p, mmap_mode="r") for p in folder.glob(f"{prefix}_*.npy")}
    if layout == "packed":
        return PackedStrings.from_arrays(arrays, count, prefix)
    return CompressedStrings.from_arrays(arrays, count, prefix, shown=folder)


def report(docs: list[dict[str, Any]], reads: int) -> dict[str, Any]:
    live, _ = LiveDocuments.from_documents(docs)
    columns = {"text": list(live.texts), "title": list(live.titles)}
    n = len(live)
    rng = np.random.default_rng(0)
    hits = rng.integers(0, n, (reads, HITS))
    out: dict[str, Any] = {"documents": n}
    for column, strings in columns.items():
        out[f"{column}_utf8_bytes_per_doc"] = sum(len(s.encode()) for s in strings) / n
    for layout, make in LAYOUTS.items():
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            figures: dict[str, Any] = {}
            disk = 0
            for column, strings in columns.items():
                start = time.perf_counter()
                store = make(strings)
                figures[f"{column}_build_s"] = round(time.perf_counter() - start, 3)
                size = _saved(store, folder, column)
                figures[f"{column}_bytes_per_doc"] = round(size / n, 2)
                if isinstance(store, CompressedStrings):
                    figures[f"{column}_blocks"] = store.num_blocks
                    figures[f"{column}_dictionary_bytes"] = len(
                        store.arrays(column)[f"{column}_zdict"]
                    )
                disk += size
            figures["bytes_per_doc"] = round(disk / n, 2)
            texts, titles = (_mapped(layout, folder, n, c) for c in columns)
            assert texts.take(hits[0]) == [columns["text"][i] for i in hits[0]]
            times: dict[str, list[float]] = {"ten_hits_us": [], "same_ten_again_us": []}
            for row in hits:
                for timed in times.values():
                    start = time.perf_counter()
                    texts.take(row)
                    titles.take(row)
                    timed.append(time.perf_counter() - start)
            for name, timed in times.items():
                figures[name] = {
                    f"p{q}": round(1e6 * float(np.percentile(timed, q)), 1) for q in (50, 95)
                }
        out[layout] = figures
    out["ratio"] = round(out["packed"]["bytes_per_doc"] / out["compressed"]["bytes_per_doc"], 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--corpus", type=Path, help="a BEIR corpus.jsonl instead of the scale one")
    parser.add_argument("--reads", type=int, default=2000, help="reads of ten hits timed")
    args = parser.parse_args(argv)
    print(json.dumps(report(_documents(args), args.reads), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
