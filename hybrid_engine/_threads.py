"""Thread counts and the worker pool shared by every parallel batch."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

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
