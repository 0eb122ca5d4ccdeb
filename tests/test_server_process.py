"""``hybrid-engine serve`` as a real process: SIGTERM (the stop signal of systemd, Docker and
Kubernetes) settles the staged changes as SIGINT does, and a bad or taken port is a one-line
error naming it, exit status 2, before the index is loaded.

Each test starts ``python -m hybrid_engine serve`` on a BM25-only index (no model to load, so
it starts in a couple of seconds) on a free loopback port."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from live_oracle import document, live_documents

import hybrid_engine
from hybrid_engine import HybridIndex

httpx = pytest.importorskip("httpx", reason="the serve extra is not installed")
pytest.importorskip("uvicorn", reason="the serve extra is not installed")

START_TIMEOUT_S = 60.0
"""Seconds a server has to load the index and answer ``/health``."""
STOP_TIMEOUT_S = 30.0
"""Seconds a server has to stop after a signal."""
SERVING = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+) ")
"""serve's line once the port is bound."""


@pytest.fixture
def index(tmp_path: Path) -> Path:
    """A saved BM25-only live index of 5 documents (its write lock given back)."""
    path = tmp_path / "index"
    with HybridIndex.build([document(i) for i in range(5)], retrievers=("bm25",)) as engine:
        engine.save(path)
    return path


class Serve:
    """A ``hybrid-engine serve`` process; its stderr is read by a thread into ``lines``."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(Path(hybrid_engine.__file__).parents[1])}
        env.pop("HYBRID_ENGINE_API_KEY", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "hybrid_engine", "serve", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    def url(self) -> str:
        """The base URL, once serve has said it and ``/health`` answers."""
        deadline = time.monotonic() + START_TIMEOUT_S
        port = None
        while port is None:
            found = [m for m in map(SERVING.search, list(self.lines)) if m]
            port = found[0].group(1) if found else None
            assert self.process.poll() is None, f"serve ended: {self.stderr()}"
            assert time.monotonic() < deadline, f"serve did not bind: {self.stderr()}"
            time.sleep(0.05)
        url = f"http://127.0.0.1:{port}"
        while True:
            try:
                if httpx.get(f"{url}/health").status_code == 200:
                    return url
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"serve did not answer: {self.stderr()}"
            time.sleep(0.05)

    def wait(self) -> int:
        """The exit status, after the process ends and its stderr is read."""
        status = self.process.wait(timeout=STOP_TIMEOUT_S)
        self.reader.join(timeout=STOP_TIMEOUT_S)
        return status

    def stderr(self) -> str:
        return "".join(self.lines)


@pytest.fixture
def serve() -> Iterator[type[Serve]]:
    """``Serve``, with every process it started killed at the end, however the test ended."""
    started: list[Serve] = []

    class Tracked(Serve):
        def __init__(self, *args: str) -> None:
            super().__init__(*args)
            started.append(self)

    yield Tracked
    for server in started:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()


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
