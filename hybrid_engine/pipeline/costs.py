"""What each search stage costs an engine: a running estimate from the measured times of its
past searches, which ``HybridIndex.search(budget_ms=...)`` plans with (``budget``)."""

from __future__ import annotations

import threading

EWMA_ALPHA = 0.3
"""Weight of the newest measurement in the running estimate: recent searches dominate after a
few, so a model that slows down (or recovers) changes the plan within a handful of searches."""


class StageCosts:
    """An exponentially weighted moving average of each stage's milliseconds per unit of work.

    A unit is what the stage's time grows with: a query for the legs, fusion and MMR, a
    (query, passage) pair for the reranker. The first run of a stage is a warm-up and is not
    counted (it pays one-off costs: numba compilation, ONNX Runtime's first allocations);
    the second seeds the estimate. A stage without estimate yet has none (``estimate``
    returns None).

    Notes
    -----
    Thread-safe: searches in several threads may ``observe`` and ``estimate`` at once.
    """

    def __init__(self, alpha: float = EWMA_ALPHA) -> None:
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")
        self._alpha = alpha
        self._per_unit: dict[str, float] = {}
        self._warm: set[str] = set()
        self._lock = threading.Lock()

    def observe(self, stage: str, ms: float, units: int) -> None:
        """Fold one run of ``stage`` (``ms`` milliseconds for ``units`` units) into its estimate;
        a run of no units is ignored."""
        if units <= 0:
            return
        per_unit = ms / units
        with self._lock:
            if stage not in self._warm:
                self._warm.add(stage)
                return
            old = self._per_unit.get(stage)
            self._per_unit[stage] = (
                per_unit if old is None else old + self._alpha * (per_unit - old)
            )

    def estimate(self, stage: str, units: int) -> float | None:
        """Estimated milliseconds of ``stage`` over ``units`` units; None before its first run."""
        with self._lock:
            per_unit = self._per_unit.get(stage)
        return None if per_unit is None else per_unit * max(units, 0)

    def per_unit(self) -> dict[str, float]:
        """A copy of every estimate, in milliseconds per unit, by stage."""
        with self._lock:
            return dict(self._per_unit)
