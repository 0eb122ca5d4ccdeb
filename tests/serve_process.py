"""``hybrid-engine serve`` as a real process on a free loopback port, for the tests that talk
to one (signals, the search page)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from live_oracle import document

import hybrid_engine
from hybrid_engine import HybridIndex

START_TIMEOUT_S = 60.0
"""Seconds a server has to load the index and answer ``/health``."""
STOP_TIMEOUT_S = 30.0
"""Seconds a server has to stop after a signal."""
SERVING = re.compile(r"serving .* on http://127\.0\.0\.1:(\d+) ")
"""serve's line once the port is bound."""


class Serve:
    """A ``hybrid-engine serve`` process (``api_key``: the one it reads from its environment,
    none by default; ``start_timeout_s``: how long it has to answer); its stderr is read by a
    thread into ``lines``."""

    def __init__(
        self, *args: str, api_key: str | None = None, start_timeout_s: float = START_TIMEOUT_S
    ) -> None:
        self.start_timeout_s = start_timeout_s
        env = {**os.environ, "PYTHONPATH": str(Path(hybrid_engine.__file__).parents[1])}
        env.pop("HYBRID_ENGINE_API_KEY", None)
        if api_key is not None:
            env["HYBRID_ENGINE_API_KEY"] = api_key
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
        deadline = time.monotonic() + self.start_timeout_s
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


def saved_bm25_index(path: Path, n_docs: int) -> Path:
    """A saved BM25-only live index of ``live_oracle.document(0..n_docs - 1)`` at ``path``
    (no model to load, so serve starts in seconds), its write lock given back."""
    with HybridIndex.build([document(i) for i in range(n_docs)], retrievers=("bm25",)) as engine:
        engine.save(path)
    return path
