"""Thread counts and the worker pool shared by every parallel batch."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
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


def across_parts(n_parts: int, n_queries: int, num_threads: int | None) -> tuple[int, int | None]:
    """How a batch of ``n_queries`` searched part by part (an engine's segments) spends
    ``num_threads`` (None: every core): ``(parts searched at once, num_threads of each part's
    search)``. A batch of fewer queries than threads cannot keep them busy alone (one query
    runs on one thread), so its parts run side by side, one thread each; a larger batch
    searches its parts in turn, each over every thread."""
    threads = default_threads() if num_threads is None else num_threads
    if n_parts > 1 and n_queries < threads:
        return min(threads, n_parts), 1
    return 1, num_threads


def map_split(work: Callable[[T], R], items: Sequence[T], threads: int) -> list[R]:
    """``[work(item) for item in items]``, the items in ``threads`` contiguous slices run at
    once on the shared pool (inline when ``threads == 1``); re-raises the first error."""
    out: list[R | None] = [None] * len(items)

    def run(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            out[i] = work(items[i])

    run_split(len(items), min(threads, len(items)), run)
    return out  # type: ignore[return-value]
