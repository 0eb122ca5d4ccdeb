"""``serve_in_thread``: run an app under uvicorn in a thread of this process, on loopback, for
tests, load tests and notebooks (``hybrid-engine serve`` runs it in the foreground)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

STARTUP_TIMEOUT_S = 30.0
"""Seconds the server has to start listening."""


@contextmanager
def serve_in_thread(app: Any, *, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve ``app`` until the block ends; yields its base URL (``http://host:port``).

    Parameters
    ----------
    app : ASGI app
        ``create_app``'s, or any.
    host : str
        Address to bind; loopback by default.
    port : int
        Port; 0 takes a free one.

    Raises
    ------
    RuntimeError
        The server did not start within ``STARTUP_TIMEOUT_S`` (the port is taken, say).
    """
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(timeout=5.0)
            raise RuntimeError(f"the server on {host}:{port} did not start (is the port taken?)")
        time.sleep(0.01)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(timeout=STARTUP_TIMEOUT_S)
