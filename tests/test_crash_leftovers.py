"""What interrupted writes leave is removed by the next open, and only that.

- A load removes an index directory's slots that no save and no reader holds, and a live
  index's entries that no commit point names while no writer holds its lock (taken without
  waiting; a writer taking it meanwhile waits, it does not fail).
- A save to the directory that a killed first hybrid save left (no commit point) proceeds.
- Never taken for leftovers: a user's file, an index with a commit point, a slot a save
  holds, a version a reader holds, anything while a writer holds the lock; and a read-only
  directory still loads.

Kills are real (a forkserver child dies at the Nth write, tests/faults.py); the state after
each is checked against a fresh build (tests/live_oracle.py).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import crash_targets
import crash_worker
import numpy as np
import pytest
from dense_oracle import HashingEncoder
from faults import DIED, Fault, injected
from live_oracle import assert_bm25_equals_fresh, document, live_documents, new_engine

from hybrid_engine import BM25Index, storage
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.live import commits, layout
from hybrid_engine.storage import replace

N_DOCS = crash_targets.HYBRID_SIZES[0]
INITIAL = [document(i) for i in range(20)]
QUERIES = ["w1", "w2 w3", "w5 w8 w13"]
WAIT_S = 60.0
"""Bound on waiting for another thread to reach a point (a hang guard, never a measure)."""


@pytest.fixture(scope="module")
def context() -> Iterator[object]:
    patch = pytest.MonkeyPatch()
    yield crash_worker.forkserver(patch)
    patch.undo()


def die_at_write(context, operation: str, args: tuple, at: int) -> None:  # type: ignore[no-untyped-def]
    """Run ``operation`` in a child that dies at its ``at``-th write (after half of it)."""
    fault = Fault("write", at, "exit", half=True)
    child = context.Process(target=crash_targets.die_at, args=(operation, args, fault))
    child.start()
    child.join(crash_worker.JOIN_TIMEOUT_S)
    assert child.exitcode == DIED, f"{operation} write {at}: exit code {child.exitcode}"


def writes(operation: str, args: tuple) -> int:
    """The writes ``operation`` makes (run here, counting)."""
    with injected(Fault()) as counting:
        crash_targets.OPERATIONS[operation](*args)
    return counting.counts["write"]


def unreferenced(path: Path) -> list[str]:
    """The entries of the live index ``path`` its latest commit point does not name."""
    keep = commits.named(commits.read_commit(path))
    return sorted(set(os.listdir(path)) - keep)


def reopened(path: Path) -> list[dict]:
    """The live documents at ``path``, checked to search as a fresh build of them."""
    with HybridIndex.load(path, encoder=HashingEncoder()) as engine:
        assert_bm25_equals_fresh(engine)
        return live_documents(engine)


def killed_first_save(context, path: Path, at: int) -> list[str]:  # type: ignore[no-untyped-def]
    """What a hybrid save to the new ``path`` killed at its ``at``-th write left there."""
    die_at_write(context, "hybrid", (path, N_DOCS), at)
    assert not commits.is_live_index(path)
    return sorted(os.listdir(path))


def killed_commit(context, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """A live index of ``INITIAL`` whose next commit was killed half way through."""
    path = tmp_path / "live"
    with new_engine(INITIAL) as engine:
        engine.save(path)
    shutil.copytree(path, tmp_path / "count")
    die_at_write(context, "commit", (path,), writes("commit", (tmp_path / "count",)) // 2)
    assert unreferenced(path), "the killed commit left nothing: nothing is tested"
    return path


# --- a save over what a killed first save left ------------------------------------------------


def test_a_save_to_what_a_killed_first_save_left_proceeds(context, tmp_path: Path) -> None:
    count = writes("hybrid", (tmp_path / "count", N_DOCS))
    for at in sorted({1, count // 3, 2 * count // 3, count}):
        path = tmp_path / f"write-{at}" / "hybrid"
        left = killed_first_save(context, path, at)
        assert layout.LOCK in left and len(left) > 1, f"write {at}: left {left}"
        crash_targets.save_hybrid(path, N_DOCS)
        assert reopened(path) == INITIAL[:N_DOCS]
        assert unreferenced(path) == []


def _user_file(path: Path) -> str:
    (path / "notes.txt").write_text("mine")
    return "notes.txt"


def _link(path: Path) -> str:
    (path / "seg-000009").symlink_to(path.parent)  # a layout name, but not a directory
    return "seg-000009"


def _no_lock(path: Path) -> str:
    (path / layout.LOCK).unlink()
    return layout.LOCK


@pytest.mark.parametrize("spoil", [_user_file, _link, _no_lock])
def test_a_save_refuses_a_leftover_holding_anything_else(context, tmp_path: Path, spoil) -> None:
    path = tmp_path / "hybrid"
    count = writes("hybrid", (tmp_path / "count", N_DOCS))
    killed_first_save(context, path, count // 2)
    named = spoil(path)
    before = sorted(os.listdir(path))
    with pytest.raises(
        FileExistsError,
        match=f"{re.escape(str(path))}.*{named}.*remove {re.escape(str(path))} first",
    ):
        crash_targets.save_hybrid(path, N_DOCS)
    assert sorted(os.listdir(path)) == before


def test_a_save_refuses_a_live_index(tmp_path: Path) -> None:
    path = tmp_path / "live"
    with new_engine(INITIAL) as engine:
        engine.save(path)
    before = sorted(os.listdir(path))
    with pytest.raises(
        FileExistsError, match=f"{re.escape(str(path))}.*live index .*commit-00000001.json"
    ):
        crash_targets.save_hybrid(path, N_DOCS)
    assert sorted(os.listdir(path)) == before
    assert reopened(path) == INITIAL


# --- a load after an interrupted commit -------------------------------------------------------


def test_a_load_removes_a_killed_commits_leftovers_once_no_writer_holds_the_lock(
    context, tmp_path: Path
) -> None:
    path = killed_commit(context, tmp_path)
    left = unreferenced(path)
    writer = commits.WriterLock(path)  # a writer at work
    try:
        assert reopened(path) == INITIAL
        assert unreferenced(path) == left
    finally:
        writer.release()
    assert reopened(path) == INITIAL
    assert unreferenced(path) == []


def test_a_writer_waits_for_a_load_removing_leftovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A load holds the write lock while it removes leftovers: a writer taking the lock then
    waits for it, and does not report another writer."""
    path = tmp_path / "live"
    with new_engine(INITIAL) as engine:
        engine.save(path)
    writer = HybridIndex.load(path, encoder=HashingEncoder())
    shutil.copytree(path / "seg-000000", path / "seg-000777")  # as a killed commit leaves
    removing, waiting, go = threading.Event(), threading.Event(), threading.Event()
    remove, retry = commits.remove_entries, commits._try_lock_once_tidied

    def remove_when_told(*args) -> None:  # type: ignore[no-untyped-def]
        if not removing.is_set():  # the load's removal (the writer's comes after)
            removing.set()
            assert go.wait(WAIT_S)
        remove(*args)

    def note_waiting(*args) -> bool:  # type: ignore[no-untyped-def]
        waiting.set()
        return retry(*args)

    monkeypatch.setattr(commits, "remove_entries", remove_when_told)
    monkeypatch.setattr(commits, "_try_lock_once_tidied", note_waiting)
    errors: list[BaseException] = []

    def run(call) -> threading.Thread:  # type: ignore[no-untyped-def]
        def body() -> None:
            try:
                call()
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=body)
        thread.start()
        return thread

    loader = run(lambda: HybridIndex.load(path, encoder=HashingEncoder()).close())
    assert removing.wait(WAIT_S)
    adder = run(lambda: writer.add([document(50)]))
    assert waiting.wait(WAIT_S)  # the writer found the lock taken, and waits
    go.set()
    loader.join()
    adder.join()
    assert errors == []
    writer.commit(num_threads=1)
    writer.close()
    assert reopened(path) == [*INITIAL, document(50)]
    assert unreferenced(path) == []


def test_loads_beside_writers_never_break_a_commit(tmp_path: Path) -> None:
    """Writers (each taking the lock anew) commit while loads run, and each may remove
    what no commit point names: every commit succeeds, every load sees a committed state."""
    path = tmp_path / "live"
    with new_engine(INITIAL[:5]) as engine:
        engine.save(path)
    states = [INITIAL[: 5 + step] for step in range(16)]
    errors: list[BaseException] = []
    done = threading.Event()

    def commit_each() -> None:
        try:
            for step in range(5, 20):
                with HybridIndex.load(path, encoder=HashingEncoder()) as engine:
                    engine.add([INITIAL[step]])
                    engine.commit(num_threads=1)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    committer = threading.Thread(target=commit_each)
    committer.start()
    seen = []
    while not done.is_set():
        with HybridIndex.load(path, encoder=HashingEncoder()) as engine:
            seen.append(live_documents(engine))
    committer.join()
    assert errors == []
    assert seen and all(state in states for state in seen)
    assert reopened(path) == INITIAL
    assert unreferenced(path) == []


# --- index directories ------------------------------------------------------------------------


def test_a_load_removes_only_the_slots_no_save_and_no_reader_holds(tmp_path: Path) -> None:
    versions = [BM25Index.build(crash_targets.bm25_corpus(v)) for v in range(2)]
    path = tmp_path / "index"
    versions[0].save(path)
    held, lock = replace._reserve_slot(path)  # a save at work
    try:
        with storage.open_index_dir(path) as root:
            versions[1].save(path)  # version 0 goes to a slot, which this reader holds
            reading = [p for p in tmp_path.iterdir() if p.name not in ("index", held.name)]
            assert len(reading) == 1
            BM25Index.load(path)
            assert sorted(tmp_path.iterdir()) == sorted([path, held, *reading])
            assert len(BM25Index.load(root)) == len(versions[0])
    finally:
        os.close(lock)
    assert len(BM25Index.load(path)) == len(versions[1])
    assert os.listdir(tmp_path) == ["index"]


# --- read-only directories --------------------------------------------------------------------


@contextlib.contextmanager
def read_only(monkeypatch: pytest.MonkeyPatch, *folders: Path) -> Iterator[None]:
    """``folders`` read-only (mode 0o555) and, for a process that permissions do not bind
    (root), every removal refused as the kernel refuses them to any other."""

    def refuse(*args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    modes = [folder.stat().st_mode for folder in folders]
    with monkeypatch.context() as patch:
        for name in ("unlink", "remove", "rmdir"):
            patch.setattr(os, name, refuse)
        for folder in folders:
            folder.chmod(0o555)
        try:
            yield
        finally:
            for folder, mode in zip(folders, modes, strict=True):
                folder.chmod(mode)


def test_a_read_only_directory_still_loads(
    context, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = killed_commit(context, tmp_path / "a")
    left = unreferenced(live)
    bm25 = BM25Index.build(crash_targets.bm25_corpus(0))
    index = tmp_path / "b" / "index"
    bm25.save(index)
    slot, lock = replace._reserve_slot(index)
    (slot / "new").mkdir()
    os.close(lock)  # as a killed save leaves it
    with read_only(monkeypatch, live, index.parent):
        assert reopened(live) == INITIAL
        got = BM25Index.load(index).search(QUERIES, 5)
        assert sorted(os.listdir(index.parent)) == sorted(["index", slot.name])
        assert unreferenced(live) == left
    expected = bm25.search(QUERIES, 5)
    np.testing.assert_array_equal(got.ids, expected.ids)
    np.testing.assert_array_equal(got.scores, expected.scores)
    assert reopened(live) == INITIAL  # writable again: the next load removes them
    assert unreferenced(live) == []
    BM25Index.load(index)
    assert os.listdir(index.parent) == ["index"]
