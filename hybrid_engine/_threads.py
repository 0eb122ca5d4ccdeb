"""Thread counts and the worker pool shared by every parallel batch."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

R = TypeVar("R")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def default_threads() -> int:
    """Cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def shared_pool(workers: int) -> ThreadPoolExecutor:
    """A process-wide pool of at least ``workers`` threads.

    Reusing threads saves a thread start per call. The pool only grows; an outgrown pool
    finishes its queued work.
    """
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < workers:
            _pool = ThreadPoolExecutor(
                max_workers=max(workers, default_threads()), thread_name_prefix="hybrid_engine"
            )
            _pool_size = max(workers, default_threads())
        return _pool


def run_split(n: int, threads: int, work: Callable[[int, int], None]) -> None:
    """Run ``work(start, stop)`` over ``threads`` contiguous slices of ``range(n)`` on the
    shared pool (inline when ``threads == 1``); re-raises the first error."""
    if threads <= 1:
        work(0, n)
        return
    bounds = [n * i // threads for i in range(threads + 1)]
    pool = shared_pool(threads)
    futures = [pool.submit(work, lo, hi) for lo, hi in itertools.pairwise(bounds)]
    for future in futures:
        future.result()


def map_parts(
    search: Callable[[int, int | None], R], n_parts: int, n_queries: int, num_threads: int | None
) -> list[R]:
    """``[search(part, part_threads) for part in range(n_parts)]``: a batch of ``n_queries``
    searched part by part (an engine's segments) within ``num_threads`` (None: every core).
    A batch of fewer queries than threads cannot keep them busy alone (one query runs on one
    thread), so its parts run side by side on the shared pool, in contiguous slices, each
    searched with ``part_threads`` 1; a larger batch searches its parts in turn, each with
    ``part_threads`` ``num_threads``. Re-raises the first error."""
    threads = default_threads() if num_threads is None else num_threads
    if n_parts <= 1 or n_queries >= threads:
        return [search(part, num_threads) for part in range(n_parts)]
    out: list[R | None] = [None] * n_parts

    def run(lo: int, hi: int) -> None:
        for part in range(lo, hi):
            out[part] = search(part, 1)

    run_split(n_parts, min(threads, n_parts), run)
    return out  # type: ignore[return-value]
