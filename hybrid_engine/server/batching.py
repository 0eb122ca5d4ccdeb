"""Micro-batching of concurrent searches: requests with the same options that arrive while the
engine is busy share one ``HybridIndex.search`` call (one encoder call, one batched search per
leg, one cross-encoder call).

A request that finds an engine slot free runs at once, alone: batching adds no wait. While
``max_running`` engine calls are in flight, requests queue in groups of the same options, at
most ``max_batch`` queries a group; each time a call ends, the oldest group runs. So the
engine never runs more than ``max_running`` calls at once (a CPU-bound engine gains nothing
from more), and a request waits at most for the calls ahead of it. At most ``max_queued``
queries wait; beyond that a request is refused (``BatcherFullError``, the server's 503).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hybrid_engine.errors import BatcherFullError
from hybrid_engine.pipeline.facets import Facets
from hybrid_engine.result import Hit

LegRanks = dict[str, tuple[int, float]]
"""A hit's 1-based rank and score in each leg that returned it (``HybridResult.explain``)."""


@dataclass(frozen=True, kw_only=True)
class CallExtras:
    """What an engine call answers beside its hits and timings (keywords, after them): the
    stages it left out, failed (``degraded``) and skipped for its budget (``skipped``); per
    query, when asked, its facet counts, each hit's highlighted snippet and each hit's ranks
    in the legs; from a sharded index, the shards that did not answer and each one's
    milliseconds (``ShardedResult``)."""

    degraded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    facets: list[Facets] | None = None
    highlights: list[list[str]] | None = None
    legs: list[list[LegRanks]] | None = None
    missing_shards: list[int] | None = None
    shard_timings: dict[int, float] | None = None


@dataclass(frozen=True)
class Rows(CallExtras):
    """One engine call's answer: per query its hits, the call's stage timings in
    milliseconds, and its ``CallExtras``."""

    hits: list[list[Hit]]
    timings: dict[str, float]


Search = Callable[[list[str], Mapping[str, Any]], Awaitable[Rows]]
"""``await search(texts, options) -> Rows``: one engine call (``HybridIndex.asearch``, which
runs the search in a worker thread)."""


@dataclass(frozen=True)
class BatchPolicy:
    """When queued searches run (the module docstring describes the policy).

    Attributes
    ----------
    max_batch : int
        Queries a group of waiting requests collects, >= 1 (a single request with more
        is a group of its own, whole).
    max_running : int
        Engine calls in flight before requests queue, >= 1.
    max_queued : int
        Queries waiting, at most, >= 1.
    """

    max_batch: int = 32
    max_running: int = 2
    max_queued: int = 4096

    def __post_init__(self) -> None:
        for name in ("max_batch", "max_running", "max_queued"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"BatchPolicy.{name} must be an int >= 1, got {value!r}")


@dataclass(frozen=True)
class BatchedResult(CallExtras):
    """One request's share of a batched engine call.

    Attributes
    ----------
    hits : list of list of Hit
        The request's queries' hits, best first.
    timings : dict of str to float
        The milliseconds of each stage of the engine call (the whole batch's).
    batch_size : int
        Queries the engine call answered.
    degraded, skipped : list of str
        The stages the engine call left out: failed, and skipped to keep its budget.
    facets : list of dict or None
        The request's queries' facet counts (``HybridResult.facets``), or None.
    highlights : list of list of str or None
        Each hit's highlighted snippet (``HybridResult.highlights``), or None.
    legs : list of list of dict or None
        Each hit's rank and score in each leg (``HybridResult.explain``), or None.
    missing_shards, shard_timings : list of int, dict of int to float, or None
        A sharded index's: the shards that did not answer, each shard's milliseconds.
    """

    hits: list[list[Hit]]
    timings: dict[str, float]
    batch_size: int

    @classmethod
    def share(cls, rows: Rows, start: int, stop: int) -> BatchedResult:
        """Queries ``start:stop`` of an engine call's ``rows``."""

        def mine(values: list[Any] | None) -> list[Any] | None:
            return values[start:stop] if values is not None else None

        return cls(
            rows.hits[start:stop],
            rows.timings,
            len(rows.hits),
            degraded=rows.degraded,
            skipped=rows.skipped,
            facets=mine(rows.facets),
            highlights=mine(rows.highlights),
            legs=mine(rows.legs),
            missing_shards=rows.missing_shards,
            shard_timings=rows.shard_timings,
        )


@dataclass
class _Group:
    """Requests with the same options, waiting to run together."""

    key: str
    options: Mapping[str, Any]
    texts: list[str] = field(default_factory=list)
    waiters: list[tuple[int, int, asyncio.Future[BatchedResult]]] = field(default_factory=list)


class SearchBatcher:
    """Runs searches through ``search``, batching those that wait (module docstring).

    Parameters
    ----------
    search : callable
        ``(texts, options) -> (hits per text, timings)``, run in the threadpool.
    policy : BatchPolicy
        When queued requests run.
    """

    def __init__(self, search: Search, policy: BatchPolicy) -> None:
        self._search = search
        self.policy = policy
        self._waiting: deque[_Group] = deque()  # oldest first
        self._open: dict[str, _Group] = {}  # the group still filling, by options
        self._running = 0
        self._queued = 0
        self._tasks: set[asyncio.Task[None]] = set()  # the loop keeps only weak references

    async def search(self, texts: Sequence[str], options: Mapping[str, Any]) -> BatchedResult:
        """The result of ``texts`` searched with ``options``, alone or in a batch.

        Raises
        ------
        BatcherFullError
            ``max_queued`` queries wait already.
        ValueError, TypeError
            What the engine raises for these options (the request is rerun alone first, so
            the error is its own).
        """
        if self._running < self.policy.max_running and not self._waiting:
            return await self._run_alone(list(texts), options)
        if self._queued + len(texts) > self.policy.max_queued:
            raise BatcherFullError(
                f"{self._queued} queries are waiting (max_queued={self.policy.max_queued}): "
                "retry later, or run more servers"
            )
        key = json.dumps(options, sort_keys=True, default=repr)
        group = self._open.get(key)
        if group is None or len(group.texts) + len(texts) > self.policy.max_batch:
            group = self._open[key] = _Group(key, options)
            self._waiting.append(group)
        future: asyncio.Future[BatchedResult] = asyncio.get_running_loop().create_future()
        start = len(group.texts)
        group.texts.extend(texts)
        group.waiters.append((start, len(group.texts), future))
        self._queued += len(texts)
        return await future

    async def _run_alone(self, texts: list[str], options: Mapping[str, Any]) -> BatchedResult:
        self._running += 1
        try:
            rows = await self._search(texts, options)
        finally:
            self._finished()
        return BatchedResult.share(rows, 0, len(texts))

    async def _run_group(self, group: _Group) -> None:
        try:
            try:
                rows = await self._search(group.texts, group.options)
            except Exception as exc:
                if len(group.waiters) > 1:
                    await self._run_each(group)
                elif not group.waiters[0][2].done():
                    group.waiters[0][2].set_exception(exc)
                return
            for start, stop, future in group.waiters:
                if not future.done():  # its client may have gone
                    future.set_result(BatchedResult.share(rows, start, stop))
        finally:
            self._finished()

    async def _run_each(self, group: _Group) -> None:
        """After a failed batch: each request alone, so each gets its own result or error."""
        for start, stop, future in group.waiters:
            try:
                texts = group.texts[start:stop]
                rows = await self._search(texts, group.options)
            except Exception as exc:
                if not future.done():
                    future.set_exception(exc)
            else:
                if not future.done():
                    future.set_result(BatchedResult.share(rows, 0, stop - start))

    def _finished(self) -> None:
        """One engine call ended: start the oldest waiting group, if any."""
        self._running -= 1
        while self._waiting and self._running < self.policy.max_running:
            group = self._waiting.popleft()
            if self._open.get(group.key) is group:
                del self._open[group.key]
            self._queued -= len(group.texts)
            self._running += 1
            task = asyncio.get_running_loop().create_task(self._run_group(group))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
