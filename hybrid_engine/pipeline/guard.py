"""One search's stages run under the engine's failure and budget rules (docs/degradation.md):
a stage that raises is left out (or, with ``strict``, its error is raised as a
``StageError``), an optional stage the budget cannot afford is skipped, and one that runs
gets the rest of the budget as its deadline."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from hybrid_engine.errors import IndexFormatError, StageError
from hybrid_engine.pipeline.budget import Deadline, plan_skips, run_within
from hybrid_engine.pipeline.degradation import Health, stage_fix

_T = TypeVar("_T")

BUDGET = "budget"
"""Reason of a stage skipped before it started: its estimate did not fit, or no time was left."""
TIMEOUT = "timeout"
"""Reason of a stage abandoned at its deadline."""
BUSY = "busy"
"""Reason of a stage skipped because its last abandoned call is still running."""


class StageRunner:
    """The stages of one search: their timings, and the stages it served without.

    Attributes
    ----------
    timings : dict of str to float
        Milliseconds of each stage that ran to the end.
    degraded : list of str
        Stages left out because they failed (or their model was not loaded), in stage order.
    skipped : list of str
        Stages left out to keep the budget, in stage order.
    reasons : dict of str to str
        Why each stage of ``degraded`` and ``skipped`` was left out.
    """

    def __init__(self, health: Health, *, strict: bool, budget_ms: float | None) -> None:
        self.timings: dict[str, float] = {}
        self.degraded: list[str] = []
        self.skipped: list[str] = []
        self.reasons: dict[str, str] = {}
        self._health = health
        self._strict = strict
        self._deadline = Deadline(budget_ms)
        self._planned: set[str] = set()
        self.first_error: Exception | None = None
        """The first error a stage raised (what ``nothing_to_fuse`` is chained to)."""

    def plan(self, fixed: Mapping[str, int], optional: Mapping[str, int]) -> None:
        """Choose the optional stages to skip from the running estimates: ``fixed`` and
        ``optional`` give the units of work of the stages that always run and of those that
        may be skipped (``budget.plan_skips``), but a stage unmeasured for
        ``costs.PROBE_AFTER_S`` runs (``StageCosts.claim_probe``). Nothing is skipped without
        budget."""
        budget = self._deadline.budget_ms
        if budget is None:
            return
        costs = self._health.costs
        fixed_ms = sum(costs.estimate(stage, units) or 0.0 for stage, units in fixed.items())
        estimates = {stage: costs.estimate(stage, units) for stage, units in optional.items()}
        skips = plan_skips(budget, fixed_ms, estimates)
        # A stage planned out for long runs once under its deadline: is it fast again?
        self._planned = {stage for stage in skips if not costs.claim_probe(stage)}

    def run(
        self, stage: str, call: Callable[[], _T], units: int, *, optional: bool, degradable: bool
    ) -> _T | None:
        """``call()``'s value, timed, or None when the stage is left out.

        Parameters
        ----------
        stage : str
            Its name in ``timings``, ``degraded``, ``skipped``.
        call : callable
            The stage's work (it never returns None).
        units : int
            Its units of work (``costs.StageCosts``).
        optional : bool
            The budget may skip it, and it runs with the rest of the budget as deadline.
        degradable : bool
            An error leaves it out (a ``StageError`` under ``strict``); otherwise it is raised.
        """
        if optional and self._deadline.budget_ms is not None:
            return self._run_budgeted(stage, call, units, degradable)
        tick = time.perf_counter()
        try:
            value = call()
        except Exception as exc:
            if not degradable:
                raise
            self._fail(stage, exc)
            return None
        ms = (time.perf_counter() - tick) * 1000
        self.timings[stage] = ms
        self._health.costs.observe(stage, ms, units)
        return value

    def _run_budgeted(
        self, stage: str, call: Callable[[], _T], units: int, degradable: bool
    ) -> _T | None:
        remaining = self._deadline.remaining_ms()
        if stage in self._planned or remaining <= 0:
            self.skip(stage, BUDGET)
            return None
        if self._health.abandoned.running(stage):
            self.skip(stage, BUSY)
            return None
        costs = self._health.costs
        tick = time.perf_counter()
        try:
            finished, value = run_within(
                stage,
                call,
                remaining,
                self._health.abandoned,
                lambda ms: costs.observe(stage, ms, units),
            )
        except Exception as exc:
            if not degradable:
                raise
            self._fail(stage, exc)
            return None
        if not finished:
            self.skip(stage, TIMEOUT)
            return None
        self.timings[stage] = (time.perf_counter() - tick) * 1000
        return value

    def skip(self, stage: str, reason: str) -> None:
        """Record ``stage`` as skipped to keep the budget, because of ``reason``."""
        self.skipped.append(stage)
        self.reasons[stage] = reason
        self._health.skipped(stage)

    def lose(self, stage: str, reason: str) -> None:
        """Record ``stage`` as degraded without running it (its model is not loaded, or a
        stage it needs is missing)."""
        self.degraded.append(stage)
        self.reasons[stage] = reason
        self._health.failed(stage, reason)

    def nothing_to_fuse(self) -> StageError:
        """The error of a search whose every leg is missing."""
        why = ", ".join(f"{stage}: {reason}" for stage, reason in self.reasons.items())
        fixes = "; ".join(stage_fix(stage) for stage in self.degraded)
        return StageError(
            f"no leg of the search answered ({why}), so there is nothing to fuse"
            + (f". Fix: {fixes}" if fixes else "; give a larger budget_ms")
        )

    def _fail(self, stage: str, exc: Exception) -> None:
        reason = f"error: {exc!r}"
        if self._strict and isinstance(exc, IndexFormatError):
            # Damaged files found while searching (a posting list checked when first read):
            # the error names them and says to rebuild, which no model fix would help.
            raise exc
        if self._strict:
            raise StageError(
                f"the {stage} stage failed ({exc!r}). Fix: {stage_fix(stage)}; without "
                "strict=True the search serves without it"
            ) from exc
        if self.first_error is None:
            self.first_error = exc
        self.degraded.append(stage)
        self.reasons[stage] = reason
        self._health.failed(stage, reason)
