"""Atomic commits across shards under kill -9 (docs/scaling.md "Atomic commits"): a
coordinator process (tests/sharded_crash_child.py) on a Ray cluster of its own commits
transactions to a two-shard index and is killed at every step of a commit (before prepare,
after prepare, after the decision, after applying, at a random time), or kills one of its
shards' actors at every step (Ray restarts it at its last commit). The next coordinator opens
the index, which finishes a decided transaction and rolls back an undecided one, and what
every shard's last commit then holds, read from disk, must be the documents of the
transactions up to the last one a ``commit`` returned for, or one more (the one in flight):
no acknowledged commit lost, no transaction half visible (each transaction adds, deletes and
upserts documents on both shards).

``HYBRID_ENGINE_FULL_CRASH_LOOPS=1`` runs 120 kills; the default, a few of each kind.
"""

from __future__ import annotations

import fcntl
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the ray extra is not installed")

from sharded_crash_child import N_SHARDS, acknowledged, expected

from hybrid_engine.distributed.manifest import shard_dir

pytestmark = pytest.mark.slow
CHILD = Path(__file__).with_name("sharded_crash_child.py")
FULL = os.environ.get("HYBRID_ENGINE_FULL_CRASH_LOOPS") == "1"
MODES = (
    "die_before_prepare",
    "die_after_prepare",
    "die_after_decide",
    "die_after_apply",
    "shard_before_prepare",
    "shard_after_prepare",
    "shard_after_decide",
    "shard_random",
    "random",
)
RUNS = 120 if FULL else len(MODES)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ray_head() -> Iterator[str]:
    """A Ray head node started as its own processes (``ray start --head``), stopped after:
    the processes of its temporary folder, and nothing else of Ray on the machine. Ray's
    token authentication (the default of ``ray start``) with a token of the test's own, in
    ``RAY_AUTH_TOKEN`` for the head and every process that joins it."""
    ray_cli = str(Path(sys.executable).with_name("ray"))
    temp = tempfile.mkdtemp(prefix="he-ray-", dir="/tmp")  # short: Ray's socket paths
    port = _free_port()
    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=os.urandom(32).hex())
    subprocess.run(
        [ray_cli, "start", "--head", f"--port={port}", "--num-cpus=2", f"--temp-dir={temp}",
         "--include-dashboard=false", "--disable-usage-stats"],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        yield f"127.0.0.1:{port}"
    finally:
        _kill_processes_using(temp)
        shutil.rmtree(temp, ignore_errors=True)
        for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
            os.environ.pop(name, None)


def _kill_processes_using(text: str) -> None:
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if text in cmdline and int(pid) != os.getpid():
                with __import__("contextlib").suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)


def _wait_unlocked(root: Path, timeout_s: float = 60.0) -> None:
    """Wait until no process holds a shard's write lock: Ray stops the actors of a dead
    coordinator a moment after it died."""
    deadline = time.monotonic() + timeout_s
    for shard in range(N_SHARDS):
        lock = shard_dir(root, shard) / "write.lock"
        while lock.exists():
            with open(lock, "rb") as f:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    pass
            assert time.monotonic() < deadline, f"{lock} still held after {timeout_s} s"
            time.sleep(0.2)


def _child(address: str, root: Path, work: Path, mode: str, seed: int) -> subprocess.Popen:
    """A coordinator committing 3 transactions (100 for ``random``, killed among them)."""
    txns = "100" if mode == "random" else "3"
    args = [sys.executable, str(CHILD), address, str(root), str(work), mode, str(seed), txns]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(CHILD.parent), *sys.path])}
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _check(observed: dict, acked: int) -> None:
    """The shards hold exactly the transactions up to the last decided one (none half), and
    that one is at least the last acknowledged (none lost)."""
    decided = observed["decided"]
    assert decided >= acked, f"commit {acked} was acknowledged, but only {decided} decided"
    assert observed["documents"] == expected(decided), f"not the state of commit {decided}"


def test_no_commit_is_lost_and_none_is_half_visible(ray_head: str, tmp_path: Path) -> None:
    root, work = tmp_path / "sharded", tmp_path / "work"
    work.mkdir()
    build = _child(ray_head, root, work, "build", 0)
    assert build.wait(timeout=300) == 0, build.stderr.read().decode()  # type: ignore[union-attr]
    rng = random.Random(1)
    coordinator_kills = shard_kills = checked = 0
    for run in range(RUNS):
        mode = MODES[run] if run < len(MODES) else rng.choice(MODES)
        _wait_unlocked(root)
        acked = acknowledged(work)
        (work / "observed.json").unlink(missing_ok=True)
        started = time.monotonic()
        child = _child(ray_head, root, work, mode, run)
        if mode == "random":
            time.sleep(rng.uniform(2.5, 8.0))
            child.send_signal(signal.SIGKILL)
        code = child.wait(timeout=600)
        errors = child.stderr.read().decode()  # type: ignore[union-attr]
        if mode.startswith("die_"):
            assert code == 137, (mode, code, errors)
        elif mode != "random":
            assert code == 0, (mode, code, errors)
        if mode.startswith("shard_"):
            shard_kills += 1  # the child killed one, and went on
        elif code in (137, -signal.SIGKILL):
            coordinator_kills += 1
        print(f"run {run} {mode}: exit {code}, {time.monotonic() - started:.1f} s")
        if (work / "observed.json").exists():  # what the last crash left, once reopened
            _check(json.loads((work / "observed.json").read_text()), acked)
            checked += 1
    _wait_unlocked(root)
    acked = acknowledged(work)
    last = _child(ray_head, root, work, "shard_random", RUNS)  # a last reopen, checked
    assert last.wait(timeout=600) == 0, last.stderr.read().decode()  # type: ignore[union-attr]
    _check(json.loads((work / "observed.json").read_text()), acked)
    assert not list(root.glob("*.txn-*.jsonl"))  # every transaction finished or rolled back
    assert checked >= RUNS // 2 and coordinator_kills + shard_kills >= RUNS - 2
    print(
        f"{coordinator_kills} coordinator kills, {shard_kills} shard kills, {checked} reopens "
        f"checked, {acknowledged(work)} commits acknowledged"
    )
