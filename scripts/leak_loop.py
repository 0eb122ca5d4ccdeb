"""LeakSanitizer workload of the sanitizer lane (``.ci/sanitize``, docs/hardening.md).

Builds, saves, loads (read and memory-mapped) and searches a BM25 and a SPLADE impact index,
and drives every error path of the compiled core (C++ exceptions through pybind11), round after
round. LeakSanitizer is asked, in process and after a garbage collection, for every heap block
nothing points to any more: once after two warm-up rounds (numba has compiled or loaded every
kernel by then, and the second round saves over the first one's files) and once after all
rounds. The run fails when

- a leaked block was allocated by ``_core`` (its frame is in the allocation stack), or
- the second check finds at least one more leaked block per round than the first: a leak in
  every round, even one whose stack lost the ``_core`` frame (CPython has no frame pointers,
  so LSan's fast unwinder may stop inside the interpreter).

Both checks also report a few blocks that are not leaks: Python objects whose only reference
is in memory LSan does not scan (CPython 3.11 keeps frames, hence local variables, in mmap'd
chunks; numba's compiled code keeps its constants in JIT memory). They come and go by one or
two between the checks, never one per round. ``.ci/lsan.supp`` silences the large families
that are safe to silence.

Run it only under the sanitized build::

    LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(g++ -print-file-name=libstdc++.so)" \\
        PYTHONMALLOC=malloc ASAN_OPTIONS=detect_leaks=1:leak_check_at_exit=0:log_path=lsan \\
        LSAN_OPTIONS=suppressions=.ci/lsan.supp python scripts/leak_loop.py --log-prefix lsan

Exits 1 when a leak is found (the report is in the log), 2 when LeakSanitizer is not loaded.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import hashlib
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hybrid_engine import (
    Analyzer,
    AnalyzerConfig,
    BM25Index,
    IndexFormatError,
    SparseVectors,
    SpladeIndex,
    _core,
)

WORDS = [
    "retrieval", "hybrid", "running", "indexes", "généralement", "naïve", "Straße", "ΣΊΣΥΦΟΣ",
    "москва", "東京都", "검색", "ひらがな", "the", "and", "x", "a" * 70, "emoji😀mixed",
    "tab\tnul\0", "caf\u0065\u0301", "ﬁnancial", "İstanbul", "crying", "dying", "generously",
    "proceeding",
]  # fmt: skip


WARM_UP_ROUNDS = 2
# A frame of the compiled core: symbolized (its sources, namespace, pybind11) or not (the .so).
OUR_FRAME = re.compile(r"_core\.cpython|csrc/|hybrid_engine::|pybind11")


class HashingEncoder:
    """A deterministic stand-in for a SPLADE model: hashed lowercase tokens, log1p weights."""

    vocab_size = 512
    model_hash = hashlib.sha256(b"leak-loop-hashing-encoder").hexdigest()

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> SparseVectors:
        """One CSR row per text, term ids ascending."""
        offsets, terms, weights = [0], [], []
        for text in texts:
            row: dict[int, float] = {}
            for token in text.lower().split():
                term = int.from_bytes(hashlib.sha256(token.encode()).digest()[:4], "little")
                row[term % self.vocab_size] = row.get(term % self.vocab_size, 0.0) + 1.0
            for term in sorted(row):
                terms.append(term)
                weights.append(float(np.log1p(row[term])))
            offsets.append(len(terms))
        return SparseVectors(
            np.array(offsets, np.int64), np.array(terms, np.int32), np.array(weights, np.float32)
        )


def corpus(rng: np.random.Generator, n_docs: int) -> list[str]:
    """``n_docs`` texts of 0 to 40 words drawn from ``WORDS`` (an empty text among them)."""
    return [" ".join(rng.choice(WORDS, size=rng.integers(0, 40))) for _ in range(n_docs)]


def error_paths() -> None:
    """Every refusal of the compiled core, each one a C++ exception unwinding through pybind11."""
    offsets, terms = np.array([0, 3, 2], np.int64), np.arange(2, dtype=np.int32)
    cases = [
        lambda: _core.invert_impacts(offsets, terms, np.ones(2, np.uint8), 4),
        lambda: _core.invert_impacts(np.array([0, 2], np.int64), terms, np.ones(2, np.uint8), 1),
        lambda: _core.invert_impacts(
            np.array([0, 2], np.int64), np.zeros(2, np.int32), np.ones(2, np.uint8), 4
        ),
        lambda: _core.vocab_slots(np.frombuffer(b"abab", np.uint8), np.array([0, 2, 4])),
        lambda: _core.check_vocab_slots(
            np.frombuffer(b"ab", np.uint8), np.array([0, 2]), np.ones(16, np.uint64)
        ),
        lambda: _core.QueryEncoder(
            _core.AnalyzerConfig(),
            np.frombuffer(b"ab", np.uint8),
            np.array([0, 2]),
            np.zeros(12, np.uint64),
        ),
        lambda: Analyzer(AnalyzerConfig(stemmer="klingon")),
        lambda: BM25Index.build(["fine", "lone \ud800 surrogate"]),
        lambda: BM25Index.build(["fine", 3]),  # type: ignore[list-item]
    ]
    for case in cases:
        try:
            case()
        except (ValueError, TypeError, IndexFormatError):
            pass
        else:
            raise AssertionError("a malformed input was accepted")


def iteration(rng: np.random.Generator, folder: Path, encoder: HashingEncoder) -> int:
    """One build / save / load / search round of both indexes; returns the hits found."""
    texts = corpus(rng, 300)
    queries = [*corpus(rng, 20), "", "東京都 검색", "running dying"]
    hits = 0
    for analyzer in (AnalyzerConfig(), AnalyzerConfig(cjk="bigram", lowercase=False)):
        index = BM25Index.build(texts, analyzer=analyzer, num_threads=2, batch_size=128)
        index.save(folder / "bm25")
        for mmap in (False, True):
            loaded = BM25Index.load(folder / "bm25", mmap=mmap)
            hits += int((loaded.search(queries, k=5).ids >= 0).sum())
        Analyzer(analyzer).analyze(texts[0])
    splade = SpladeIndex.build(texts, encoder=encoder)
    splade.save(folder / "splade")
    for mmap in (False, True):
        loaded_splade = SpladeIndex.load(folder / "splade", encoder=encoder, mmap=mmap)
        hits += int((loaded_splade.search(queries, k=5).ids >= 0).sum())
        loaded_splade.document_vectors()
    error_paths()
    return hits


def leak_report(check: ctypes._CFuncPtr, log_prefix: str) -> tuple[int, list[str]]:
    """Run one LeakSanitizer check; the number of leaked blocks it reports and the leak
    records (header and stack) that name ``_core``."""
    log = Path(f"{log_prefix}.{os.getpid()}")
    seen = log.stat().st_size if log.exists() else 0
    check()
    text = log.read_text(errors="replace")[seen:] if log.exists() else ""
    counts = re.findall(r"leaked in (\d+) allocation", text)
    records = re.split(r"\n(?=(?:Direct|Indirect) leak of)", text)
    ours = [r for r in records if " leak of " in r and OUR_FRAME.search(r)]
    return (int(counts[-1]) if counts else 0), ours


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds after the warm-up")
    parser.add_argument(
        "--log-prefix", required=True, help="ASAN_OPTIONS' log_path (reports go there)"
    )
    args = parser.parse_args()
    try:
        check = ctypes.CDLL(None).__lsan_do_recoverable_leak_check
    except AttributeError:
        print("LeakSanitizer is not loaded: preload gcc's libasan.so", file=sys.stderr)
        return 2
    rng = np.random.default_rng(0)
    encoder = HashingEncoder()
    with tempfile.TemporaryDirectory() as tmp:
        hits = sum(iteration(rng, Path(tmp), encoder) for _ in range(WARM_UP_ROUNDS))
        gc.collect()
        warm, ours_warm = leak_report(check, args.log_prefix)
        for _ in range(args.rounds):
            hits += iteration(rng, Path(tmp), encoder)
    gc.collect()
    after, ours = leak_report(check, args.log_prefix)
    print(
        f"{WARM_UP_ROUNDS} + {args.rounds} rounds ({hits} hits): {warm} blocks leaked after "
        f"the warm-up, "
        f"{after} after all rounds, {len(ours_warm + ours)} leak records from {_core.__file__}"
    )
    for record in ours_warm + ours:
        print(record, file=sys.stderr)
    if ours_warm or ours or after - warm >= args.rounds:
        print(f"LeakSanitizer: LEAKS (reports in {args.log_prefix}.*)", file=sys.stderr)
        return 1
    print("LeakSanitizer: no leak from _core, none growing with the rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
