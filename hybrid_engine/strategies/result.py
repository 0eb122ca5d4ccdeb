"""What a strategy returns: the final ranking plus, per query, every search it ran, what was
generated, and the milliseconds of generation and retrieval."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.pipeline.result import HybridResult
from hybrid_engine.result import SearchResult

Generate = Callable[[str], str]
"""A text generator: prompt in, continuation out (``generation.load_generator``'s callable)."""

_T = TypeVar("_T")


@dataclass(frozen=True)
class Step:
    """One engine search a strategy ran for one query.

    Attributes
    ----------
    strategy : str
        The strategy's name (``"hyde"``, ``"decompose"``, ...).
    label : str
        Which search of it: ``"query"``, ``"subquery-2"``, ``"hop-1"``, ...
    query : str
        The text searched.
    doc_ids : tuple of str
        Its hits, best first (as deep as the strategy searched).
    ms : float
        Its milliseconds (query encoding included; HyDE's passage encoding too).
    """

    strategy: str
    label: str
    query: str
    doc_ids: tuple[str, ...]
    ms: float


@dataclass
class QueryTrace:
    """What a strategy did for one query.

    Attributes
    ----------
    query : str
        The query.
    steps : list of Step
        Every engine search, in order.
    generated : dict
        By strategy name: what it generated (raw texts and their parsed form; for
        ``self-query`` the filter and whether it validated).
    timings : dict of str to float
        Milliseconds by ``"<strategy>.generation"``, ``"<strategy>.retrieval"`` and
        ``"<strategy>.fusion"`` (those that ran).
    left_out : dict of str to dict of str to str
        ``{"degraded": {stage: reason}, "skipped": {stage: reason}}``: the stages any of its
        searches left out (``HybridResult.degraded``, ``skipped`` and ``reasons``; the first
        reason of each).
    """

    query: str
    steps: list[Step] = field(default_factory=list)
    generated: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    left_out: dict[str, dict[str, str]] = field(
        default_factory=lambda: {"degraded": {}, "skipped": {}}
    )

    def sources(self) -> dict[str, list[str]]:
        """Each retrieved document id -> the ``"strategy/label"`` of every step that found
        it, in step order."""
        out: dict[str, list[str]] = {}
        for step in self.steps:
            for doc_id in step.doc_ids:
                out.setdefault(doc_id, []).append(f"{step.strategy}/{step.label}")
        return out

    def search(
        self,
        strategy: str,
        label: str,
        query: str,
        call: Callable[..., HybridResult],
        *args: Any,
        **kwargs: Any,
    ) -> HybridResult:
        """``call(*args, **kwargs)``, an engine search of ``query``, recorded as a ``Step``
        and timed into ``timings["<strategy>.retrieval"]``."""
        tick = time.perf_counter()
        hits = call(*args, **kwargs)
        ms = (time.perf_counter() - tick) * 1000
        key = f"{strategy}.retrieval"
        self.timings[key] = self.timings.get(key, 0.0) + ms
        self.steps.append(Step(strategy, label, query, tuple(hits.doc_ids[0]), ms))
        for kind, stages in (("degraded", hits.degraded), ("skipped", hits.skipped)):
            for stage in stages:
                self.left_out[kind].setdefault(stage, hits.reasons.get(stage, ""))
        return hits

    def absorb(self, other: QueryTrace) -> None:
        """Add ``other``'s steps, generations, timings and left-out stages (another
        strategy's trace of the same query)."""
        self.steps.extend(other.steps)
        self.generated.update(other.generated)
        self.timings.update(other.timings)
        for kind, stages in other.left_out.items():
            for stage, reason in stages.items():
                self.left_out[kind].setdefault(stage, reason)

    def timed(self, key: str, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``call(*args, **kwargs)``, its milliseconds added to ``timings[key]``."""
        tick = time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            ms = (time.perf_counter() - tick) * 1000
            self.timings[key] = self.timings.get(key, 0.0) + ms


@dataclass(frozen=True)
class StrategyResult(HybridResult):
    """A ``HybridResult`` (``ids``, ``scores``, ``doc_ids``, ``hits()``) of a strategy, with
    a ``QueryTrace`` per query.

    Attributes
    ----------
    traces : tuple of QueryTrace
        One per query, in order.
    timings : dict of str to float
        The traces' milliseconds summed over the batch (one query: its own), plus
        ``"generation"`` and ``"retrieval"`` (all strategies) and ``"total"``.
    degraded, skipped, reasons
        The stages any of the searches left out (``HybridResult``'s fields; each trace's
        ``left_out`` says which query's).
    """

    traces: tuple[QueryTrace, ...] = ()


SearchOne = Callable[[HybridIndex, str, QueryTrace], SearchResult]
"""``(engine, query, trace) -> row``: a strategy's work for one query, its ``(1, k)`` row,
each engine search recorded in ``trace`` (``QueryTrace.search``)."""


def run_per_query(
    engine: HybridIndex, queries: Sequence[str], search_one: SearchOne, k: int
) -> StrategyResult:
    """``search_one`` of each of the checked ``queries`` on one commit (``engine.pinned()``:
    a commit or merge meanwhile cannot mix the positions of its steps), assembled with the
    traces (``assemble``), rows of ``k`` hits."""
    start = time.perf_counter()
    engine = engine.pinned()
    rows, traces = [], []
    for query in queries:
        trace = QueryTrace(query)
        rows.append(search_one(engine, query, trace))
        traces.append(trace)
    template = engine.search([], k)  # the pinned commit's documents
    return assemble(rows, traces, template, (time.perf_counter() - start) * 1000)


def assemble(
    rows: Sequence[SearchResult],
    traces: Sequence[QueryTrace],
    template: HybridResult,
    total_ms: float,
) -> StrategyResult:
    """One ``StrategyResult`` of per-query rows (each ``(1, k)`` or wider) and their traces,
    reading documents from ``template``'s snapshot, as wide as ``template`` (``min(k, live
    documents)``: the columns past it are padding)."""
    width = template.ids.shape[1]
    empty_ids, empty_scores = np.empty((0, 0), np.int64), np.empty((0, 0), np.float32)
    ids = np.concatenate([r.ids[:, :width] for r in rows]) if rows else empty_ids
    scores = np.concatenate([r.scores[:, :width] for r in rows]) if rows else empty_scores
    timings: dict[str, float] = {}
    for trace in traces:
        for key, ms in trace.timings.items():
            timings[key] = timings.get(key, 0.0) + ms
    for kind in ("generation", "retrieval"):
        timings[kind] = sum(ms for key, ms in timings.items() if key.endswith(f".{kind}"))
    timings["total"] = total_ms
    left_out: dict[str, dict[str, str]] = {"degraded": {}, "skipped": {}}
    for trace in traces:
        for kind, stages in trace.left_out.items():
            for stage, reason in stages.items():
                left_out[kind].setdefault(stage, reason)
    return StrategyResult(
        ids,
        scores,
        timings,
        template.snapshot,
        tuple(traces),
        degraded=list(left_out["degraded"]),
        skipped=list(left_out["skipped"]),
        reasons={**left_out["skipped"], **left_out["degraded"]},
    )
