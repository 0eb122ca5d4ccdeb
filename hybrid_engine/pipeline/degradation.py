"""What an engine does when a stage fails: it serves without it, says so once per stage with
a ``DegradedWarning`` (the error and the fix), and counts every search served so
(``Health``); docs/degradation.md."""

from __future__ import annotations

import sys
import threading
import warnings
from collections import Counter
from pathlib import Path

from hybrid_engine.errors import DegradedWarning
from hybrid_engine.models.store import PREPARE_COMMAND, PREPARE_COMMANDS
from hybrid_engine.pipeline.budget import AbandonedCalls
from hybrid_engine.pipeline.costs import StageCosts

FIXES = {
    "bm25": "the BM25 leg's files may be damaged: rebuild the index",
    "dense": (
        f"check the bi-encoder: prepare it again with `{PREPARE_COMMAND} --force`, or pass a "
        "working encoder= to HybridIndex.load"
    ),
    "splade": (
        f"check the SPLADE model: prepare it again with `{PREPARE_COMMAND} --force`, or pass a "
        "working splade_encoder= to HybridIndex.load"
    ),
    "rerank": (
        f"check the cross-encoder: prepare it again with `{PREPARE_COMMANDS['cross-encoder']} "
        "--force`, or detach it with engine.with_reranker(None)"
    ),
}
"""What to do about a failing stage, by stage."""
_PACKAGE = str(Path(__file__).resolve().parents[1])


def stage_fix(stage: str) -> str:
    """The fix of ``stage``'s failure (``FIXES``)."""
    return FIXES.get(stage, "see docs/degradation.md")


def served_without(stage: str) -> str:
    """What a search serves when ``stage`` is missing."""
    return "the fused ranking" if stage == "rerank" else "the other legs fused"


class Health:
    """One engine's record of its searches' failures and budget skips, the stages' running
    cost estimates, and its abandoned stage calls.

    Attributes
    ----------
    costs : StageCosts
        Milliseconds per unit of each stage, from its measured runs.
    abandoned : AbandonedCalls
        Calls of each stage past their deadline that have not returned yet.

    Notes
    -----
    Thread-safe.
    """

    def __init__(self) -> None:
        self.costs = StageCosts()
        self.abandoned = AbandonedCalls()
        self._failures: Counter[str] = Counter()
        self._skips: Counter[str] = Counter()
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    def failed(self, stage: str, reason: str) -> None:
        """Count a search served without ``stage`` because of ``reason`` (an error, a model
        not loaded), with a ``DegradedWarning`` the first time for this stage."""
        with self._lock:
            self._failures[stage] += 1
            first = stage not in self._warned
            self._warned.add(stage)
        if first:
            warn_degraded(stage, reason)

    def warned(self, stage: str) -> None:
        """Record that ``stage``'s warning was issued already (at load)."""
        with self._lock:
            self._warned.add(stage)

    def skipped(self, stage: str) -> None:
        """Count a search that skipped ``stage`` to keep its budget."""
        with self._lock:
            self._skips[stage] += 1

    @property
    def degradations(self) -> dict[str, int]:
        """Searches served without each stage because it failed (or was not loaded)."""
        with self._lock:
            return dict(self._failures)

    @property
    def skips(self) -> dict[str, int]:
        """Searches that skipped each stage to keep their budget."""
        with self._lock:
            return dict(self._skips)


def warn_degraded(stage: str, reason: str) -> None:
    """The ``DegradedWarning`` of ``stage`` missing because of ``reason``, attributed to the
    first caller outside hybrid_engine."""
    warnings.warn(
        f"the {stage} stage is unavailable ({reason}); serving {served_without(stage)} "
        f"without it. Fix: {stage_fix(stage)}. search(strict=True) raises the error instead.",
        DegradedWarning,
        stacklevel=_outside_package(),
    )


def _outside_package() -> int:
    """The ``stacklevel`` of ``warnings.warn``, called from here, that names the first frame
    outside this package."""
    level, frame = 2, sys._getframe(2)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    return level
