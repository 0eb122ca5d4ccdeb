"""The child of tests/test_live_crash.py, and what the crash tests share (their forkserver,
the kill, the journal): the child mutates a live index until it is killed, journaling each
commit. The forkserver imports this module before it forks any child, so the import warms the
engine up (one build, commit and merge in a scratch directory): every child starts with the
numba kernels compiled, as a fork of a running service would, and reaches its commits within
the test's kill delays."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import tempfile
import time
from multiprocessing.context import ForkServerContext
from pathlib import Path

import pytest
from dense_oracle import HashingEncoder
from live_oracle import document, live_documents, new_engine

from hybrid_engine.engine.index import HybridIndex

PRELOAD = ["crash_worker", "crash_targets"]
"""What the crash tests' forkserver imports before it forks a child: every crash test sets
the same list, as the first one to start the (process-wide) forkserver decides it for all."""


JOIN_TIMEOUT_S = 60.0
"""Seconds a killed child has to be reaped."""


def kill_count(full: int) -> int:
    """The SIGKILLs a loop of ``full`` runs: all of them with ``HYBRID_ENGINE_FULL_CRASH_LOOPS=1``
    (the measurement of docs/hardening.md), else the first quarter of the same seeded loop
    (the test command's bounded lane)."""
    return full if os.environ.get("HYBRID_ENGINE_FULL_CRASH_LOOPS") == "1" else full // 4


def forkserver(monkeypatch: pytest.MonkeyPatch) -> ForkServerContext:
    """The forkserver context the crash tests fork their children from, its server importing
    ``PRELOAD`` from tests/ (it is started with this environment)."""
    path = [str(Path(__file__).parent), *filter(None, [os.environ.get("PYTHONPATH")])]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(path))
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def kill_after(
    context: ForkServerContext, target: object, args: tuple, journal: Path, delay: float
) -> None:
    """Start ``target(*args)`` in a child, SIGKILL it ``delay`` seconds after it first writes
    to ``journal`` (once it is at work, however long a loaded machine takes to get it there),
    reap it."""
    size = journal.stat().st_size
    child = context.Process(target=target, args=args)
    child.start()
    deadline = time.monotonic() + JOIN_TIMEOUT_S
    while journal.stat().st_size == size and child.is_alive() and time.monotonic() < deadline:
        time.sleep(0.002)
    assert journal.stat().st_size > size, f"{target}{args} never got to work"
    time.sleep(delay)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join(JOIN_TIMEOUT_S)
    assert child.exitcode == -signal.SIGKILL, f"{target}{args}: exit code {child.exitcode}"


def journal_record(path: Path, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def since_parent(journal: Path) -> list[dict]:
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


def mutate_forever(index: Path, journal: Path, seed: int) -> None:
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
        journal_record(journal, {"pending": sorted(live)})
        if rng.random() < 0.15:
            engine.merge(num_threads=1)
        else:
            engine.commit(num_threads=1)
        journal_record(journal, {"done": sorted(live)})


def _warm_up() -> None:
    """Build, save, load, add, delete, commit and merge once, in a scratch directory."""
    with tempfile.TemporaryDirectory() as scratch:
        engine = new_engine([document(i) for i in range(8)])
        engine.save(Path(scratch) / "warm")
        engine.close()
        engine = HybridIndex.load(Path(scratch) / "warm", encoder=HashingEncoder())
        engine.add([document(100 + i) for i in range(3)])
        engine.delete(["d1"])
        engine.commit(num_threads=1)
        engine.merge(num_threads=1)
        engine.search(["warm up"], k=3)
        engine.close()


_warm_up()
