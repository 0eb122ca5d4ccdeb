"""Kill -9 at random points of add / delete / commit / merge loops: every reopen is the last
completed commit (or the one in flight), whole, and the directory does not fill up.

A child process runs a seeded loop of mutations on a live index directory. Before each commit
it appends the live ids the commit will hold to a journal (fsynced), after it the commit's
completion. The parent kills it with SIGKILL after a random delay, reopens the index, and
checks: its live documents are those of the last completed commit or of the one the child
was making, nothing else, BM25 and hybrid results equal a fresh build of them, and the
reopen removed what the kill left (the files no commit point names).

The children come from a forkserver (tests/crash_worker.py), not a fork of this process: a
child killed while it held a lock it shared with its parent (tqdm's process-shared lock, say)
would otherwise hang the parent, and a fork of a large multi-threaded pytest process is not
what users run.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import crash_worker
import pytest
from crash_worker import journal_record, kill_after, kill_count, since_parent
from dense_oracle import HashingEncoder
from live_oracle import (
    assert_bm25_equals_fresh,
    assert_dense_hits_live_and_exact,
    document,
    live_documents,
    new_engine,
)

from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.live import commits as commits_module
from hybrid_engine.live import layout

KILLS = kill_count(200)
"""SIGKILLs in all (200 in the full run, see ``crash_worker.kill_count``)."""
FULL_CHECKS_EVERY = 10
"""Kills between the full comparisons with a fresh build (every kill checks the ids)."""
MAX_SEGMENTS = 10
"""Segments above which the parent merges the index."""


def _expected(records: list[dict]) -> tuple[list[str] | None, list[str]]:
    """(the live ids of the commit in flight, or None; those of the last completed one)."""
    done: list[str] = []
    pending: list[str] | None = None
    for record in records:
        if "pending" in record:
            pending = record["pending"]
        else:
            done, pending = record["done"], None
    return pending, done


@pytest.mark.slow  # ~200 forks and reopens
@pytest.mark.parametrize(
    "dense_options",
    [
        None,  # the default: int8 codes, each segment this small searched exactly
        # Every segment a graph, walked on binary codes and rescored (issue 25).
        pytest.param({"exact_threshold": 0, "quantization": "binary"}, id="binary-graph"),
    ],
)
def test_kill_minus_9_loses_nothing_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dense_options: dict | None
) -> None:
    context = crash_worker.forkserver(monkeypatch)
    index = tmp_path / "live"
    initial = new_engine([document(i) for i in range(20)], dense_options=dense_options)
    initial.save(index)
    initial.close()
    journal = tmp_path / "journal.jsonl"
    journal_record(journal, {"done": sorted(f"d{i}" for i in range(20)), "by": "parent"})
    rng = random.Random(0)
    commits = merges = 0
    for kill in range(KILLS):
        args = (index, journal, kill + 1)
        kill_after(context, crash_worker.mutate_forever, args, journal, rng.uniform(0.0, 0.6))
        records = since_parent(journal)
        commits += sum("done" in r for r in records[1:])
        engine = HybridIndex.load(index, encoder=HashingEncoder())
        ids = sorted(d["_id"] for d in live_documents(engine))
        pending, done = _expected(records)
        assert ids == done or ids == pending, f"kill {kill}: reopened a state never committed"
        if kill % FULL_CHECKS_EVERY == 0:
            assert_bm25_equals_fresh(engine)
            assert_dense_hits_live_and_exact(engine)
        # What the kill left (files no commit point names): the reopen removed it.
        left = unreferenced(index)
        assert left == [], f"kill {kill}: the reopen left {left}"
        if len(engine._state.snapshot.segments) > MAX_SEGMENTS:
            # Kills that keep landing in the commit before a merge pile up segments (and make
            # every load slower): the parent merges, as the next writer.
            engine.merge(num_threads=1)
            merges += 1
            assert unreferenced(index) == []
        # Re-journal what is on disk now, so the next child's journal starts from it.
        journal_record(journal, {"done": ids, "by": "parent"})
        engine.close()
    with HybridIndex.load(index, encoder=HashingEncoder()) as engine:
        # Child ``seed`` adds ids from ``seed * 100_000`` on (crash_worker.mutate_forever):
        # this one is past every child's range.
        engine.add([document((KILLS + 1) * 100_000)])
        engine.commit(num_threads=1)
    left_at_end = unreferenced(index)
    print(
        f"live index: {KILLS} kills, {commits} commits completed, 0 reopen failures, 0 files "
        f"left after each reopen, {len(left_at_end)} after the next writer's commit ({merges} "
        "merges by the parent)"
    )
    assert left_at_end == []
    # Every kill lands after the child's first record (kill_after), in its first commit or
    # later: on an idle machine most children complete a commit or more, on a loaded one
    # (a commit's fsyncs queue behind other processes') few do.
    assert commits >= 1, "no child completed a commit"


def unreferenced(index: Path) -> list[str]:
    """The entries of ``index`` that its latest commit point does not name (nor the lock)."""
    point = commits_module.read_commit(index)
    named = {layout.LOCK, f"commit-{point.generation:08d}.json"}
    for entry in point.segments:
        named |= {entry.name, entry.deletes} - {None}
    return sorted(set(os.listdir(index)) - named)
