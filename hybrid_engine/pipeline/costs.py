"""What each search stage costs an engine: a running estimate from the measured times of its
past searches, which ``HybridIndex.search(budget_ms=...)`` plans with (``budget``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

EWMA_ALPHA = 0.3
"""Weight of the newest measurement in the running estimate: recent searches dominate after a
few, so a model that slows down (or recovers) changes the plan within a handful of searches."""
PROBE_AFTER_S = 30.0
"""Seconds without a measurement after which a stage the budget plans out runs once anyway,
under its deadline (``claim_probe``): a model that was slow and recovered is measured again,
at the cost of one search waiting up to its budget if it has not."""


class StageCosts:
    """An exponentially weighted moving average of each stage's milliseconds per unit of work.

    A unit is what the stage's time grows with: a query for the legs, fusion and MMR, a
    (query, passage) pair for the reranker. The first run of a stage is a warm-up and is not
    counted (it pays one-off costs: numba compilation, ONNX Runtime's first allocations);
    the second seeds the estimate. A stage without estimate yet has none (``estimate``
    returns None). A stage unmeasured for ``probe_after_s`` seconds (``clock``'s) is due a
    probe (``claim_probe``), whose measurement replaces its estimate.

    Notes
    -----
    Thread-safe: searches in several threads may ``observe`` and ``estimate`` at once.
    """

    def __init__(
        self,
        alpha: float = EWMA_ALPHA,
        *,
        probe_after_s: float = PROBE_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")
        self._alpha = alpha
        self._probe_after_s = probe_after_s
        self._clock = clock
        self._per_unit: dict[str, float] = {}
        self._seen: dict[str, float] = {}  # when each stage was last measured or probed
        self._probing: set[str] = set()  # probed: the next measurement replaces the estimate
        self._warm: set[str] = set()
        self._lock = threading.Lock()

    def observe(self, stage: str, ms: float, units: int) -> None:
        """Fold one run of ``stage`` (``ms`` milliseconds for ``units`` units) into its estimate;
        a run of no units is ignored."""
        if units <= 0:
            return
        per_unit = ms / units
        with self._lock:
            self._seen[stage] = self._clock()
            if stage not in self._warm:
                self._warm.add(stage)
                return
            old = self._per_unit.get(stage)
            if old is None or stage in self._probing:
                self._probing.discard(stage)
                self._per_unit[stage] = per_unit
            else:
                self._per_unit[stage] = old + self._alpha * (per_unit - old)

    def estimate(self, stage: str, units: int) -> float | None:
        """Estimated milliseconds of ``stage`` over ``units`` units; None before its first run."""
        with self._lock:
            per_unit = self._per_unit.get(stage)
        return None if per_unit is None else per_unit * max(units, 0)

    def claim_probe(self, stage: str) -> bool:
        """Whether a search the budget would skip ``stage`` in should run it anyway: true
        once per ``probe_after_s`` without a measurement of it (the claim restarts the wait,
        so concurrent searches do not all probe). The probe's measurement replaces the stale
        estimate instead of being averaged into it."""
        with self._lock:
            now = self._clock()
            if now - self._seen.get(stage, now) < self._probe_after_s:
                return False
            self._seen[stage] = now
            self._probing.add(stage)
            return True

    def per_unit(self) -> dict[str, float]:
        """A copy of every estimate, in milliseconds per unit, by stage."""
        with self._lock:
            return dict(self._per_unit)
