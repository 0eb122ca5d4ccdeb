"""Faults at the exact dangerous points of a save, a live commit or merge, and an
embedding-cache write (tests/faults.py): the Nth rename, write or fsync fails with EIO or
ENOSPC (a full disk: that call and every later one), or the process dies there, or a write
stops half way and the process dies.

After each: the last committed state reopens and equals what was committed (documents, BM25
results against a fresh build, cached vectors against their oracle), and that reopening (the
next load or open) leaves no temporary file behind; a failure raised a clear error (the
cache, whose vectors are in hand, warns and returns them); and the next operation succeeds
and leaves nothing either (a hybrid save to the directory a killed first save left, too).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import crash_targets
import crash_worker
import numpy as np
import pytest
from crash_targets import (
    LIVE_ADDED,
    LIVE_DELETED,
    OPERATIONS,
    bm25_corpus,
    cache_texts,
)
from dense_oracle import HashingEncoder, Sha256Encoder, sha256_vectors
from faults import DIED, Fault, injected
from live_oracle import assert_bm25_equals_fresh, document, live_documents, new_engine

from hybrid_engine import BM25Index, IndexFormatError
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.live import commits, layout

SAMPLES = 3
"""Calls of each kind a fault is injected at (the first, the last and some between): a save
makes hundreds of writes (json.dump writes piece by piece), and a few renames and fsyncs."""
INITIAL = [document(i) for i in range(20)]
COMMITTED = [d for d in INITIAL if d["_id"] not in LIVE_DELETED] + list(LIVE_ADDED)
QUERIES = ["w1", "w2 w3", "w5 w8 w13", "w0 w21 w34 w55"]


def names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


# --- what each operation starts from, may leave, and must leave after the next one ------------


@dataclass(frozen=True)
class Target:
    """What an operation of crash_targets.OPERATIONS (by the same name) runs on: ``prepare``
    makes its state in a workspace and returns the operation's arguments; ``check`` reopens
    what the operation (finished or not) left and checks it is whole and one of the states it
    may leave; ``recover`` runs the next operation and checks that nothing temporary is left."""

    prepare: Callable[[Path], tuple]
    check: Callable[[Path, bool], None]
    recover: Callable[[Path], None]


_ORACLE = [BM25Index.build(bm25_corpus(v)) for v in range(len(crash_targets.BM25_SIZES))]


def _bm25_version(path: Path) -> int:
    """The version at ``path``, after checking it searches exactly as a fresh build of it."""
    loaded = BM25Index.load(path)
    version = [len(index) for index in _ORACLE].index(len(loaded))
    got, expected = loaded.search(QUERIES, 10), _ORACLE[version].search(QUERIES, 10)
    np.testing.assert_array_equal(got.ids, expected.ids)
    np.testing.assert_array_equal(got.scores, expected.scores)
    return version


def _bm25_prepare(work: Path) -> tuple:
    crash_targets.save_bm25(work / "index", 0)
    return (work / "index", 1)


def _bm25_check(work: Path, finished: bool) -> None:
    assert _bm25_version(work / "index") in ({1} if finished else {0, 1})
    assert names(work) == ["index"]  # the load removed the slot the save left


def _bm25_recover(work: Path) -> None:
    crash_targets.save_bm25(work / "index", 2)
    assert names(work) == ["index"]
    assert _bm25_version(work / "index") == 2


def _hybrid_prepare(work: Path) -> tuple:
    return (work / "hybrid", crash_targets.HYBRID_SIZES[0])


def _hybrid_check(work: Path, finished: bool) -> None:
    path = work / "hybrid"
    try:
        engine = HybridIndex.load(path, encoder=HashingEncoder())
    except IndexFormatError as exc:
        assert not finished and ("no commit point" in str(exc) or "not a directory" in str(exc))
        return
    with engine:
        assert live_documents(engine) == INITIAL[: crash_targets.HYBRID_SIZES[0]]
        assert_bm25_equals_fresh(engine)
    _assert_only_committed(path)


def _hybrid_recover(work: Path) -> None:
    """A save to the same path: over what a killed first save left there (no commit point)."""
    path = work / "hybrid"
    if not commits.is_live_index(path):
        crash_targets.save_hybrid(path, crash_targets.HYBRID_SIZES[0])
    _hybrid_check(work, True)


def _assert_only_committed(path: Path) -> None:
    """``path`` holds its lock, its latest commit point and what that names, nothing else."""
    point = commits.read_commit(path)
    named = {entry.name for entry in point.segments}
    named |= {entry.deletes for entry in point.segments if entry.deletes is not None}
    assert set(names(path)) == {layout.LOCK, f"commit-{point.generation:08d}.json"} | named


def _reopen_live(path: Path) -> list[dict]:
    """The live documents at ``path``, checked against a fresh build; the load left only
    what the latest commit point names."""
    with HybridIndex.load(path, encoder=HashingEncoder()) as engine:
        assert_bm25_equals_fresh(engine)
        documents = live_documents(engine)
    _assert_only_committed(path)
    return documents


def _commit_prepare(work: Path) -> tuple:
    engine = new_engine(INITIAL)
    engine.save(work / "live")
    engine.close()
    return (work / "live",)


def _commit_check(work: Path, finished: bool) -> None:
    assert _reopen_live(work / "live") in ([COMMITTED] if finished else [INITIAL, COMMITTED])


def _commit_recover(work: Path) -> None:
    path = work / "live"
    if _reopen_live(path) == INITIAL:
        crash_targets.commit_live(path)
    else:
        with HybridIndex.load(path, encoder=HashingEncoder()) as engine:
            engine.add([document(100 + len(LIVE_ADDED))])
            engine.commit(num_threads=1)
    assert _reopen_live(path)[: len(COMMITTED)] == COMMITTED
    _assert_only_committed(path)


def _merge_prepare(work: Path) -> tuple:
    _commit_prepare(work)
    crash_targets.commit_live(work / "live")  # two segments, one with deletions
    return (work / "live",)


def _merge_check(work: Path, finished: bool) -> None:
    assert _reopen_live(work / "live") == COMMITTED
    if finished:
        assert len(commits.read_commit(work / "live").segments) == 1


def _merge_recover(work: Path) -> None:
    """The next writer (an add and a merge) removes what the failed merge left."""
    with HybridIndex.load(work / "live", encoder=HashingEncoder()) as engine:
        engine.add([document(300)])
        engine.merge(num_threads=1)
    assert _reopen_live(work / "live") == [*COMMITTED, document(300)]
    assert len(commits.read_commit(work / "live").segments) == 1
    _assert_only_committed(work / "live")


_CACHE_STEPS = 7
"""Writes that fill the cache before the one a fault hits (which then evicts)."""


def _cache_prepare(work: Path) -> tuple:
    for step in range(_CACHE_STEPS):
        crash_targets.store_cache(work / "cache", 0, step)
    return (work / "cache", 0, _CACHE_STEPS)


def _cache_open(work: Path, step: int) -> list[str]:
    """Open the cache (``encode``) for step ``step``'s texts: their vectors are their
    oracle's, and the open leaves no temporary entry. Returns the texts encoded anew."""
    new, repeats = cache_texts(0, step)
    encoder = Sha256Encoder()
    cache = EmbeddingCache(work / "cache", max_bytes=crash_targets.CACHE_MAX_BYTES)
    got = cache.encode(encoder, new + repeats)
    np.testing.assert_array_equal(got, sha256_vectors(new + repeats))
    folder = work / "cache" / Sha256Encoder.model_hash
    assert [name for name in names(folder) if name.startswith(".")] == []
    return encoder.encoded


def _cache_check(work: Path, finished: bool) -> None:
    encoded = _cache_open(work, _CACHE_STEPS)
    if finished:
        assert encoded == []


def _cache_recover(work: Path) -> None:
    crash_targets.store_cache(work / "cache", 0, _CACHE_STEPS + 1)
    assert _cache_open(work, _CACHE_STEPS + 1) == []


TARGETS = {
    "bm25": Target(_bm25_prepare, _bm25_check, _bm25_recover),
    "bm25 in two renames": Target(_bm25_prepare, _bm25_check, _bm25_recover),
    "hybrid": Target(_hybrid_prepare, _hybrid_check, _hybrid_recover),
    "commit": Target(_commit_prepare, _commit_check, _commit_recover),
    "merge": Target(_merge_prepare, _merge_check, _merge_recover),
    "cache": Target(_cache_prepare, _cache_check, _cache_recover),
}


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, tuple]]:
    """Each target's prepared workspace (copied for every case) and its operation's
    arguments there."""
    made = {}
    for name, target in TARGETS.items():
        work = tmp_path_factory.mktemp(f"template-{name.replace(' ', '-')}")
        made[name] = (work, target.prepare(work))
    return made


def _workspace(templates: dict, name: str, work: Path) -> tuple:
    """A copy of ``name``'s template at ``work``, and the arguments rebased on it."""
    template, args = templates[name]
    shutil.copytree(template, work)
    return tuple(work / Path(a).relative_to(template) if isinstance(a, Path) else a for a in args)


def _calls(templates: dict, name: str, work: Path) -> Fault:
    """The renames, writes and fsyncs the operation makes (counted on a copy)."""
    args = _workspace(templates, name, work)
    with injected(Fault()) as counting:
        OPERATIONS[name](*args)
    return counting


def _points(count: int, samples: int) -> list[int]:
    """``samples`` calls spread over 1 ... count (all when fewer)."""
    return sorted({round(x) for x in np.linspace(1, count, min(count, samples))})


def _cases(templates: dict, name: str, tmp_path: Path, kind: str, samples: int) -> Iterator[int]:
    calls = _calls(templates, name, tmp_path / "count").counts[kind]
    assert calls > 0 or kind != "write", f"{name} made no {kind}"
    yield from _points(calls, samples)


# --- faults that raise -------------------------------------------------------------------------

RAISED = [
    pytest.param("rename", errno.EIO, False, id="rename-EIO"),
    pytest.param("write", errno.ENOSPC, True, id="write-ENOSPC"),
    pytest.param("fsync", errno.ENOSPC, True, id="fsync-ENOSPC"),
]


@pytest.mark.parametrize("name", list(TARGETS))
@pytest.mark.parametrize(("kind", "error", "sticky"), RAISED)
def test_a_failing_call_leaves_the_last_committed_state(
    templates: dict, tmp_path: Path, name: str, kind: str, error: int, sticky: bool
) -> None:
    target = TARGETS[name]
    for at in _cases(templates, name, tmp_path, kind, SAMPLES):
        work = tmp_path / f"{kind}-{at}"
        args = _workspace(templates, name, work)
        fault = Fault(kind, at, "raise", error, half=kind == "write", sticky=sticky)
        finished = False
        if name == "cache":
            with pytest.warns(RuntimeWarning, match=re.escape(str(work / "cache"))):
                with injected(fault):
                    OPERATIONS[name](*args)
        else:
            try:
                with injected(fault):
                    OPERATIONS[name](*args)
                finished = True
            except OSError as exc:
                assert exc.errno == error, f"{name}, {kind} {at}: {exc!r}"
                if error == errno.ENOSPC:
                    assert "no space left" in str(exc).lower() and str(work) in str(exc)
        assert fault.fired, f"{name}: {kind} {at} was never made"
        if name == "hybrid" and not finished:  # a failed first save leaves nothing behind
            assert not (work / "hybrid").exists() or commits.is_live_index(work / "hybrid")
        target.check(work, finished)
        target.recover(work)


# --- faults that end the process ---------------------------------------------------------------

DEATHS = [
    pytest.param("rename", False, 20, id="rename"),
    pytest.param("write", True, 3, id="half-write"),
    pytest.param("fsync", False, 2, id="fsync"),
]


@pytest.fixture(scope="module")
def context(templates: dict) -> Iterator[object]:
    patch = pytest.MonkeyPatch()
    yield crash_worker.forkserver(patch)
    patch.undo()


@pytest.mark.parametrize("name", list(TARGETS))
@pytest.mark.parametrize(("kind", "half", "samples"), DEATHS)
def test_a_death_at_a_call_leaves_the_last_committed_state(
    templates: dict, context, tmp_path: Path, name: str, kind: str, half: bool, samples: int
) -> None:
    target = TARGETS[name]
    for at in _cases(templates, name, tmp_path, kind, samples):
        work = tmp_path / f"{kind}-{at}"
        args = _workspace(templates, name, work)
        fault = Fault(kind, at, "exit", half=half)
        child = context.Process(target=crash_targets.die_at, args=(name, args, fault))
        child.start()
        child.join(crash_worker.JOIN_TIMEOUT_S)
        assert child.exitcode == DIED, f"{name}, {kind} {at}: exit code {child.exitcode}"
        target.check(work, False)
        target.recover(work)


# --- regressions -------------------------------------------------------------------------------


def test_a_commit_that_fails_after_its_commit_point_landed_is_adopted(tmp_path: Path) -> None:
    """The directory fsync after the commit point's rename fails: the commit is what loads see,
    so the engine takes it as its own (it raised, saying so) instead of committing the same
    generation again, which left a reader of the first one naming a segment removed since."""
    path = tmp_path / "live"
    _commit_prepare(tmp_path)
    shutil.copytree(path, tmp_path / "count")
    with HybridIndex.load(tmp_path / "count", encoder=HashingEncoder()) as counted:
        counted.add(LIVE_ADDED)
        with injected(Fault()) as counting:
            counted._state.commit(num_threads=1, auto_merge=False)
    writer = HybridIndex.load(path, encoder=HashingEncoder())
    writer.add(LIVE_ADDED)
    last_fsync = Fault("fsync", counting.counts["fsync"], "raise", errno.EIO)
    with injected(last_fsync), pytest.raises(OSError, match=r"commit 2 .* is in place"):
        writer._state.commit(num_threads=1, auto_merge=False)
    assert live_documents(writer) == INITIAL + list(LIVE_ADDED)
    reader = HybridIndex.load(path, encoder=HashingEncoder())
    assert live_documents(reader) == INITIAL + list(LIVE_ADDED)
    writer.commit(num_threads=1)  # nothing is staged any more: nothing is committed again
    writer.close()
    reader.add([document(300)])
    reader.commit(num_threads=1)
    reader.close()
    assert _reopen_live(path) == INITIAL + list(LIVE_ADDED) + [document(300)]
    _assert_only_committed(path)
