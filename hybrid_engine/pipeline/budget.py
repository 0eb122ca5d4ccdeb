"""A search's time budget: which optional stages to skip before it starts (``plan_skips``,
from the running estimates of ``costs``), and a deadline for each optional stage that runs
(``run_within``: the stage runs in a worker thread, and one still running at the deadline is
abandoned).
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TypeVar

_T = TypeVar("_T")

RERANK = "rerank"
"""The stage ``plan_skips`` drops first."""


def plan_skips(
    budget_ms: float, fixed_ms: float, optional: Mapping[str, float | None]
) -> list[str]:
    """The optional stages to skip so that the estimated time fits ``budget_ms``.

    Parameters
    ----------
    budget_ms : float
        The search's budget.
    fixed_ms : float
        The estimated time of the stages that always run (the floor leg, fusion, MMR).
    optional : dict of str to float or None
        The estimated milliseconds of each optional stage; None: never measured (it runs,
        and is counted as 0).

    Returns
    -------
    list of str
        Skipped first to last: ``"rerank"`` first, then the legs from the costliest, as long as
        the estimated total exceeds ``budget_ms``. Stages without estimate are never skipped
        here (their deadline still holds at run time).
    """
    known = {stage: ms for stage, ms in optional.items() if ms is not None}
    order = sorted(known, key=lambda stage: (stage != RERANK, -known[stage], stage))
    total = fixed_ms + sum(known.values())
    skipped = []
    for stage in order:
        if total <= budget_ms:
            break
        skipped.append(stage)
        total -= known[stage]
    return skipped


def check_budget(budget_ms: object) -> float | None:
    """``budget_ms`` of ``HybridIndex.search``: None, or a positive finite number of
    milliseconds.

    Raises
    ------
    ValueError
        Not a positive finite number.
    """
    if budget_ms is None:
        return None
    if (
        isinstance(budget_ms, bool)
        or not isinstance(budget_ms, (int, float))
        or not math.isfinite(budget_ms)
        or budget_ms <= 0
    ):
        raise ValueError(
            f"budget_ms must be None or a positive number of milliseconds, got {budget_ms!r}"
        )
    return float(budget_ms)


class Deadline:
    """The end of a search's budget, counted from its creation (``remaining_ms`` is infinite
    without budget)."""

    def __init__(self, budget_ms: float | None) -> None:
        self.budget_ms = budget_ms
        self._start = time.perf_counter()

    def remaining_ms(self) -> float:
        """Milliseconds left (negative once past; infinite without budget)."""
        if self.budget_ms is None:
            return math.inf
        return self.budget_ms - (time.perf_counter() - self._start) * 1000


class AbandonedCalls:
    """The calls of each stage that ``run_within`` abandoned and that have not returned yet.

    Notes
    -----
    Thread-safe.
    """

    def __init__(self) -> None:
        self._running: Counter[str] = Counter()
        self._lock = threading.Lock()

    def running(self, stage: str) -> bool:
        """Whether an abandoned call of ``stage`` is still running."""
        with self._lock:
            return self._running[stage] > 0

    def _change(self, stage: str, by: int) -> None:
        with self._lock:
            self._running[stage] += by


class _Call:
    """One stage call in a worker thread, and whether its caller stopped waiting for it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.abandoned = False
        self.value: object = None
        self.error: BaseException | None = None


def run_within(
    stage: str,
    call: Callable[[], _T],
    timeout_ms: float,
    abandoned: AbandonedCalls,
    on_return: Callable[[float], None],
) -> tuple[bool, _T | None]:
    """Run ``call`` in a new thread and wait for it at most ``timeout_ms``.

    Returns
    -------
    (bool, value)
        ``(True, value)`` when it returned in time; ``(False, None)`` when the wait timed out:
        the call is abandoned (it runs on, counted in ``abandoned`` until it returns, and its
        result is dropped).

    Raises
    ------
    Exception
        What ``call`` raised, when it raised in time (an abandoned call's error is dropped).

    Notes
    -----
    ``on_return(ms)`` is called in the worker thread with the call's own milliseconds when it
    returns without error, abandoned or not (a stage's running estimate learns its true cost
    even from an abandoned call). Python cannot stop a thread: an abandoned model call keeps
    its cores until it returns, and the interpreter waits for it at exit.
    """
    state = _Call()

    def work() -> None:
        tick = time.perf_counter()
        try:
            state.value = call()
        except BaseException as exc:  # handed to the caller, or dropped when abandoned
            state.error = exc
        else:
            on_return((time.perf_counter() - tick) * 1000)
        with state.lock:
            state.done.set()
            if state.abandoned:
                abandoned._change(stage, -1)

    # Not a daemon: an abandoned call finishes before the interpreter exits (a daemon thread
    # stopped inside ONNX Runtime at exit aborts the process).
    threading.Thread(target=work, name=f"hybrid-engine-{stage}").start()
    state.done.wait(max(timeout_ms, 0.0) / 1000)
    with state.lock:
        if not state.done.is_set():
            state.abandoned = True
            abandoned._change(stage, +1)
            return False, None
    if state.error is not None:
        raise state.error
    return True, state.value  # type: ignore[return-value]
