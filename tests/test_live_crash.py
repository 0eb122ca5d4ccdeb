"""Kill -9 at random points of add / delete / commit / merge loops: every reopen is the last
completed commit (or the one in flight), whole, and the directory does not fill up.

A forked child runs a seeded loop of mutations on a live index directory. Before each commit
it appends the live ids the commit will hold to a journal (fsynced), after it the commit's
completion. The parent kills it with SIGKILL after a random delay, reopens the index, and
checks: its live documents are those of the last completed commit or of the one the child
was making, nothing else, and BM25 and hybrid results equal a fresh build of them.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import time
from pathlib import Path

import pytest
from dense_oracle import HashingEncoder
from live_oracle import assert_bm25_equals_fresh, document, live_documents, new_engine

from hybrid_engine.pipeline.engine import HybridIndex

KILLS = 200
"""SIGKILLs in all (the acceptance asks for at least 200)."""
FULL_CHECKS_EVERY = 10
"""Kills between the full comparisons with a fresh build (every kill checks the ids)."""


def _journal(path: Path, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _child(index: Path, journal: Path, seed: int) -> None:
    """Mutate ``index`` forever (until killed), journaling each commit's live ids."""
    rng = random.Random(seed)
    engine = HybridIndex.load(index, encoder=HashingEncoder())
    live = {d["_id"] for d in live_documents(engine)}
    counter = seed * 100_000
    while True:
        for _ in range(rng.randint(1, 3)):
            action = rng.random()
            if action < 0.5 or not live:
                batch = [document(counter + j) for j in range(rng.randint(1, 6))]
                counter += len(batch)
                engine.add(batch)
                live |= {d["_id"] for d in batch}
            elif action < 0.8:
                gone = rng.sample(sorted(live), min(len(live), rng.randint(1, 4)))
                engine.delete(gone)
                live -= set(gone)
            else:
                doc_id = rng.choice(sorted(live))
                engine.upsert([{**document(int(doc_id[1:]), version=1), "_id": doc_id}])
        _journal(journal, {"pending": sorted(live)})
        if rng.random() < 0.15:
            engine.merge(num_threads=1)
        else:
            engine.commit(num_threads=1)
        _journal(journal, {"done": sorted(live)})


def _expected(journal: Path) -> tuple[list[str] | None, list[str]]:
    """(the live ids of the commit in flight, or None; those of the last completed one)."""
    done: list[str] = []
    pending: list[str] | None = None
    for line in journal.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if "pending" in record:
            pending = record["pending"]
        else:
            done, pending = record["done"], None
    return pending, done


@pytest.mark.slow  # ~200 forks and reopens
def test_kill_minus_9_loses_nothing_committed(tmp_path: Path) -> None:
    index = tmp_path / "live"
    initial = new_engine([document(i) for i in range(20)])
    initial.save(index)
    initial.close()
    journal = tmp_path / "journal.jsonl"
    _journal(journal, {"done": sorted(f"d{i}" for i in range(20))})
    context = multiprocessing.get_context("fork")
    rng = random.Random(0)
    most_files = 0
    for kill in range(KILLS):
        child = context.Process(target=_child, args=(index, journal, kill + 1))
        child.start()
        time.sleep(rng.uniform(0.02, 0.4))
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        assert child.exitcode == -signal.SIGKILL, "the child died before it was killed"
        engine = HybridIndex.load(index, encoder=HashingEncoder())
        ids = sorted(d["_id"] for d in live_documents(engine))
        pending, done = _expected(journal)
        assert ids == done or ids == pending, f"kill {kill}: reopened a state never committed"
        if kill % FULL_CHECKS_EVERY == 0:
            assert_bm25_equals_fresh(engine)
        # Re-journal what is on disk now, so the next child's journal starts from it.
        _journal(journal, {"done": ids})
        engine.close()
        most_files = max(most_files, len(os.listdir(index)))
    # Stray files are removed by the next writer: the directory holds the commit point, the
    # lock, and at most a segment directory and a mask file per segment.
    assert most_files <= 2 + 2 * 10 + 4
