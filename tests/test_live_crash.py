"""Kill -9 at random points of add / delete / commit / merge loops: every reopen is the last
completed commit (or the one in flight), whole, and the directory does not fill up.

A child process runs a seeded loop of mutations on a live index directory. Before each commit
it appends the live ids the commit will hold to a journal (fsynced), after it the commit's
completion. The parent kills it with SIGKILL after a random delay, reopens the index, and
checks: its live documents are those of the last completed commit or of the one the child
was making, nothing else, and BM25 and hybrid results equal a fresh build of them.

The children come from a forkserver (tests/crash_worker.py), not a fork of this process: a
child killed while it held a lock it shared with its parent (tqdm's process-shared lock, say)
would otherwise hang the parent, and a fork of a large multi-threaded pytest process is not
what users run.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import crash_worker
import pytest
from crash_worker import journal_record
from dense_oracle import HashingEncoder
from live_oracle import assert_bm25_equals_fresh, document, live_documents, new_engine

from hybrid_engine.pipeline.engine import HybridIndex

KILLS = 200
"""SIGKILLs in all (the acceptance asks for at least 200)."""
JOIN_TIMEOUT_S = 60.0
"""Seconds a killed child has to be reaped."""
FULL_CHECKS_EVERY = 10
"""Kills between the full comparisons with a fresh build (every kill checks the ids)."""


def _since_parent(journal: Path) -> list[dict]:
    """The journal from the parent's last record (what is on disk before the last child ran)
    on: that record, then the last child's.

    A record the kill cut short (no newline yet) is cut off the file: it was never complete,
    so what it announced had not happened (a "pending" record is written before its commit
    starts) or is announced by the record before it (a "done" record is written after its
    commit, whose "pending" record says what that commit holds)."""
    text = journal.read_bytes()
    if not text.endswith(b"\n"):
        text = text[: text.rfind(b"\n") + 1]
        journal.write_bytes(text)  # the parent's next record starts on a line of its own
    records = [json.loads(line) for line in text.decode("utf-8").splitlines()]
    last = max(i for i, r in enumerate(records) if r.get("by") == "parent")
    return records[last:]


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
def test_kill_minus_9_loses_nothing_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The forkserver imports crash_worker from tests/ (it is started with this environment).
    path = [str(Path(__file__).parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))
    index = tmp_path / "live"
    initial = new_engine([document(i) for i in range(20)])
    initial.save(index)
    initial.close()
    journal = tmp_path / "journal.jsonl"
    journal_record(journal, {"done": sorted(f"d{i}" for i in range(20)), "by": "parent"})
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["crash_worker"])  # children start warm (crash_worker)
    rng = random.Random(0)
    most_files = 0
    commits = 0
    for kill in range(KILLS):
        child = context.Process(target=crash_worker.mutate_forever, args=(index, journal, kill + 1))
        child.start()
        time.sleep(rng.uniform(0.02, 0.4))
        os.kill(child.pid, signal.SIGKILL)
        child.join(JOIN_TIMEOUT_S)
        assert child.exitcode == -signal.SIGKILL, f"kill {kill}: exit code {child.exitcode}"
        records = _since_parent(journal)
        commits += sum("done" in r for r in records[1:])
        engine = HybridIndex.load(index, encoder=HashingEncoder())
        ids = sorted(d["_id"] for d in live_documents(engine))
        pending, done = _expected(records)
        assert ids == done or ids == pending, f"kill {kill}: reopened a state never committed"
        if kill % FULL_CHECKS_EVERY == 0:
            assert_bm25_equals_fresh(engine)
        # Re-journal what is on disk now, so the next child's journal starts from it.
        journal_record(journal, {"done": ids, "by": "parent"})
        engine.close()
        most_files = max(most_files, len(os.listdir(index)))
    # Stray files are removed by the next writer: the directory holds the commit point, the
    # lock, and at most a segment directory and a mask file per segment.
    assert most_files <= 2 + 2 * 10 + 4
    # Most kills must land after commits, not during start-up (143 commits in 200 kills here).
    assert commits >= KILLS // 4, f"the children completed only {commits} commits"
