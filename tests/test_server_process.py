"""``hybrid-engine serve`` as a real process: SIGTERM (the stop signal of systemd, Docker and
Kubernetes) settles the staged changes as SIGINT does, and a bad or taken port is a one-line
error naming it, exit status 2, before the index is loaded.

Each test starts ``python -m hybrid_engine serve`` on a BM25-only index (no model to load, so
it starts in a couple of seconds) on a free loopback port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from live_oracle import document, live_documents
from serve_process import START_TIMEOUT_S, Serve, saved_bm25_index

import hybrid_engine
from hybrid_engine import HybridIndex

httpx = pytest.importorskip("httpx", reason="the serve extra is not installed")
pytest.importorskip("uvicorn", reason="the serve extra is not installed")


@pytest.fixture
def index(tmp_path: Path) -> Path:
    """A saved BM25-only live index of 5 documents (its write lock given back)."""
    return saved_bm25_index(tmp_path / "index", 5)


def stage_one(url: str) -> None:
    """Stage document 99 through the server (not committed)."""
    staged = httpx.post(f"{url}/documents", json={"documents": [document(99)]})
    assert staged.json() == {"staged": 1, "ids": ["d99"]}
    assert httpx.get(f"{url}/health").json()["staged"] == {"added": 1, "deleted": 0}


def ids_on_disk(path: Path) -> list[str]:
    """The live ids of the index directory, read by this process."""
    with HybridIndex.load(path) as engine:
        return [d["_id"] for d in live_documents(engine)]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_stop_signal_commits_the_staged_changes_with_commit_on_shutdown(
    index: Path, serve: type[Serve], stop: signal.Signals
) -> None:
    server = serve(str(index), "--port", "0", "--commit-on-shutdown")
    stage_one(server.url())
    server.process.send_signal(stop)
    assert server.wait() == 0, server.stderr()
    assert "committed the staged changes at shutdown" in server.stderr()
    assert "Traceback" not in server.stderr()
    assert ids_on_disk(index) == [f"d{i}" for i in range(5)] + ["d99"]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_a_stop_signal_drops_the_staged_changes_with_a_warning(
    index: Path, serve: type[Serve], stop: signal.Signals
) -> None:
    server = serve(str(index), "--port", "0")
    stage_one(server.url())
    server.process.send_signal(stop)
    assert server.wait() == 0, server.stderr()
    assert "warning: staged changes were not committed and are dropped" in server.stderr()
    assert "Traceback" not in server.stderr()
    assert ids_on_disk(index) == [f"d{i}" for i in range(5)]


def run_serve(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(hybrid_engine.__file__).parents[1])}
    return subprocess.run(
        [sys.executable, "-m", "hybrid_engine", "serve", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=START_TIMEOUT_S,
    )


@pytest.mark.parametrize("port", ["99999", "-1"])
def test_a_port_out_of_range_is_a_one_line_error(index: Path, port: str) -> None:
    done = run_serve(str(index), "--port", port)
    assert done.returncode == 2
    assert done.stderr == (
        f"hybrid-engine serve: error: --port must be from 0 to 65535 (0: any free port), "
        f"got {port}\n"
    )


def test_a_port_in_use_is_a_one_line_error_naming_it(index: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_serve(str(index), "--port", str(port))
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"hybrid-engine serve: error: 127.0.0.1:{port} is already in use")
    assert "--port" in lines[0]
