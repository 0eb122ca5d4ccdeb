"""The operations that tests/test_crash_loops.py and tests/test_crash_faults.py kill or break,
and the children that run them: replacing a BM25 index directory, saving a hybrid engine to a
new directory, a live commit and a merge, and embedding-cache writes (with evictions).

The forkserver imports this module (and crash_worker, the live index's child) before it forks
any child, so the indexes every save writes are built once, numba's kernels are compiled, and
a child reaches its first save within the parent's kill delays.
"""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path

import numpy as np
from crash_worker import journal_record
from dense_oracle import HashingEncoder, Sha256Encoder, sha256_vectors
from faults import Fault, injected
from live_oracle import document, new_engine

from hybrid_engine import BM25Index
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.storage import _rename

_RENAMEAT2 = _rename._RENAMEAT2

BM25_SIZES = (300, 420, 540)
"""Documents of each BM25 version (versions are told apart by their sizes)."""
HYBRID_SIZES = (12, 20)
"""Documents of each hybrid engine the save loop writes (d0, d1, ...)."""
CACHE_MAX_BYTES = 9000
"""Bound of the cache loops' shards: five or six shards of ``cache_texts``, so writes evict."""
LIVE_ADDED = tuple(document(100 + i) for i in range(6))
LIVE_DELETED = ("d1", "d2")
"""What ``commit_live`` adds and deletes."""


def bm25_corpus(version: int) -> list[str]:
    rng = np.random.default_rng(version)
    return [
        " ".join(f"w{t}" for t in rng.zipf(1.3, rng.integers(4, 30)) % 900)
        for _ in range(BM25_SIZES[version])
    ]


def cache_texts(seed: int, step: int) -> tuple[list[str], list[str]]:
    """(the texts new at ``step`` of child ``seed``, repeats of its previous step's)."""
    rng = random.Random(seed * 1_000_003 + step)
    new = [f"text {seed}.{step}.{j}" for j in range(rng.randint(8, 24))]
    repeats = [f"text {seed}.{step - 1}.{j}" for j in range(rng.randint(0, 8))] if step else []
    return new, repeats


# --- the operations ----------------------------------------------------------------------------


def save_bm25(path: Path, version: int) -> None:
    _BM25[version].save(path)


def save_hybrid(path: Path, n_docs: int) -> None:
    engine = _HYBRID[HYBRID_SIZES.index(n_docs)]
    try:
        engine.save(path)
    finally:
        engine.close()  # gives up the lock of the directory it was attached to


def commit_live(path: Path) -> None:
    """Add ``LIVE_ADDED``, delete ``LIVE_DELETED`` and commit (no merge)."""
    engine = HybridIndex.load(path, encoder=HashingEncoder())
    try:
        engine.add(LIVE_ADDED)
        engine.delete(LIVE_DELETED)
        engine._state.commit(num_threads=1, auto_merge=False)
    finally:
        engine.close()


def merge_live(path: Path) -> None:
    engine = HybridIndex.load(path, encoder=HashingEncoder())
    try:
        engine.merge(num_threads=1)
    finally:
        engine.close()


def save_bm25_in_two_renames(path: Path, version: int) -> None:
    """``save_bm25`` as where ``renameat2`` is missing (macOS, NFS, an old libc)."""
    _rename._RENAMEAT2 = None
    try:
        save_bm25(path, version)
    finally:
        _rename._RENAMEAT2 = _RENAMEAT2


def store_cache(root: Path, seed: int, step: int) -> None:
    """Encode ``cache_texts(seed, step)`` through a cache at ``root``, checking the vectors."""
    new, repeats = cache_texts(seed, step)
    texts = new + repeats
    got = EmbeddingCache(root, max_bytes=CACHE_MAX_BYTES).encode(Sha256Encoder(), texts)
    if not np.array_equal(got, sha256_vectors(texts)):
        raise AssertionError(f"the cache at {root} returned wrong vectors")


OPERATIONS = {
    "bm25": save_bm25,
    "bm25 in two renames": save_bm25_in_two_renames,
    "hybrid": save_hybrid,
    "commit": commit_live,
    "merge": merge_live,
    "cache": store_cache,
}


def die_at(operation: str, args: tuple, fault: Fault) -> None:
    """Run ``OPERATIONS[operation](*args)`` under ``fault`` (a child's body: it ends by the
    fault's ``os._exit`` or here, with status 0)."""
    with injected(fault):
        OPERATIONS[operation](*args)
    os._exit(0)


# --- the kill loops' children ------------------------------------------------------------------


def save_forever(root: Path, journal: Path, seed: int) -> None:
    """Save BM25 versions over ``root / "bm25"`` and, one time in four, a hybrid engine to a
    new directory, journaling each save before ("pending") and after ("done")."""
    rng = random.Random(seed)
    for step in range(1 << 30):
        if rng.random() < 0.25:
            name, n_docs = f"hybrid-{seed}-{step}", rng.choice(HYBRID_SIZES)
            journal_record(journal, {"pending_hybrid": [name, n_docs]})
            save_hybrid(root / name, n_docs)
            journal_record(journal, {"done_hybrid": [name, n_docs]})
        else:
            version = rng.randrange(len(BM25_SIZES))
            journal_record(journal, {"pending": version})
            save_bm25(root / "bm25", version)
            journal_record(journal, {"done": version})


def cache_forever(root: Path, journal: Path, seed: int) -> None:
    """Encode ``cache_texts(seed, step)`` for step 0, 1, ... through a cache at ``root``,
    journaling its start and each step once done."""
    journal_record(journal, {"started": seed})
    for step in range(1 << 30):
        store_cache(root, seed, step)
        journal_record(journal, {"done": [seed, step]})


def _warm_up() -> None:
    """One save and load of each kind, and a cache write, in a scratch directory."""
    with tempfile.TemporaryDirectory() as scratch:
        save_bm25(Path(scratch) / "bm25", 0)
        BM25Index.load(Path(scratch) / "bm25").search(["w1 w2"], 3)
        save_hybrid(Path(scratch) / "hybrid", HYBRID_SIZES[0])
        HybridIndex.load(Path(scratch) / "hybrid", encoder=HashingEncoder()).close()
        store_cache(Path(scratch) / "cache", 0, 0)


_BM25 = [BM25Index.build(bm25_corpus(v)) for v in range(len(BM25_SIZES))]
_HYBRID = [new_engine([document(i) for i in range(n)]) for n in HYBRID_SIZES]
_warm_up()
