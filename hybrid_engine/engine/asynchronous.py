"""The engine's asyncio face: each call runs its synchronous twin in a worker thread, so an
event loop (a FastAPI handler, a LangChain or LlamaIndex async chain) never waits on a search
or a write.

The work itself does not change: the searches release the GIL in their numba, C++ and ONNX
Runtime kernels, so the loop keeps running while they do. The workers are one per core
(``WORKERS``), shared by every engine of the process, not the loop's default executor (up to
32 threads): the searches are CPU-bound, so more threads add no throughput, and each one more
competes with the loop for the GIL in the searches' Python parts. On 2 cores, 64 concurrent
``asearch`` calls kept the loop's largest lag at 5-10 ms with 1-2 workers against 25-38 ms
with 6, at the same throughput (``benchmarks/test_async_lag.py``). Writes stay one at a time, as
the engine's lock has them.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from hybrid_engine._threads import default_threads
from hybrid_engine.corpus import Document

if TYPE_CHECKING:
    from hybrid_engine.result import Hit


_T = TypeVar("_T")
_R = TypeVar("_R", covariant=True)
_workers: ThreadPoolExecutor | None = None
_workers_lock = threading.Lock()


def workers() -> ThreadPoolExecutor:
    """The worker threads of every async call of the process: ``default_threads()`` of them
    (one per core), made on first use."""
    global _workers
    with _workers_lock:
        if _workers is None:
            _workers = ThreadPoolExecutor(default_threads(), thread_name_prefix="hybrid-async")
        return _workers


async def in_worker(call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``call(*args, **kwargs)`` awaited in one of ``workers()``."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(workers(), functools.partial(call, *args, **kwargs))


class _Engine(Protocol[_R]):
    """The synchronous methods the async ones run (every index kind's), ``search`` returning
    its kind's result."""

    @property
    def search(self) -> Callable[..., _R]: ...

    @property
    def get(self) -> Callable[..., list[Hit]]: ...

    @property
    def add(self) -> Callable[..., list[str]]: ...

    @property
    def upsert(self) -> Callable[..., list[str]]: ...

    @property
    def delete(self) -> Callable[..., int]: ...

    @property
    def commit(self) -> Callable[..., None]: ...

    @property
    def merge(self) -> Callable[..., None]: ...


class AsyncEngine(Generic[_R]):
    """``asearch``, ``aget``, ``aadd``, ``aupsert``, ``adelete``, ``acommit`` and ``amerge``:
    the synchronous methods of the same name without the ``a`` (documented there), awaited in
    one of the process's async worker threads (``workers``); the same on every index kind
    (``HybridIndex``, ``ParentDocumentIndex``, ``ShardedIndex``), ``_R`` its search's result.

    Cancelling the awaiting task does not stop a call already running in its thread: a
    search finishes and is dropped, a write finishes and is kept (as it would be
    synchronously).
    """

    async def asearch(self: _Engine[_R], queries: Any, k: int = 10, **options: Any) -> _R:
        """``search(queries, k, **options)`` without blocking the event loop."""
        return await in_worker(self.search, queries, k, **options)

    async def aget(
        self: _Engine[Any], ids: Iterable[str | int], *, missing_ok: bool = False
    ) -> list[Hit]:
        """``get(ids, missing_ok=...)`` without blocking the event loop."""
        return await in_worker(self.get, ids, missing_ok=missing_ok)

    async def aadd(self: _Engine[Any], documents: Iterable[Document]) -> list[str]:
        """``add(documents)`` without blocking the event loop."""
        return await in_worker(self.add, documents)

    async def aupsert(self: _Engine[Any], documents: Iterable[Document]) -> list[str]:
        """``upsert(documents)`` without blocking the event loop."""
        return await in_worker(self.upsert, documents)

    async def adelete(
        self: _Engine[Any], ids: Iterable[str | int], *, missing_ok: bool = False
    ) -> int:
        """``delete(ids, missing_ok=...)`` without blocking the event loop."""
        return await in_worker(self.delete, ids, missing_ok=missing_ok)

    async def acommit(self: _Engine[Any], **options: Any) -> None:
        """``commit(**options)`` (its kind's options) without blocking the event loop."""
        await in_worker(self.commit, **options)

    async def amerge(self: _Engine[Any], **options: Any) -> None:
        """``merge(**options)`` (its kind's options) without blocking the event loop."""
        await in_worker(self.merge, **options)
