"""When a live engine merges segments by itself: after each commit, ``plan`` picks what to
rewrite.

Two rules, after Lucene's tiered policy and Qdrant's vacuum threshold:

* a segment whose share of deleted documents passes ``deletes_allowed`` (20%) is rewritten
  (alone), so deleted documents stop costing search time and memory;
* when there are more than ``max_segments`` segments, the run of ``merge_factor`` adjacent
  segments holding the fewest live documents is merged into one, so a stream of small commits
  keeps the count (and the per-query cost of visiting segments) bounded, and large segments are
  rarely rewritten.

Segments whose documents are all deleted are dropped outright. Merges keep segment order, so
the collection's document order (the tie order of equal scores) is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class MergePolicy:
    """Thresholds of the automatic merges (see the module docstring).

    Attributes
    ----------
    deletes_allowed : float
        Deleted share above which a segment is rewritten, in ``(0, 1]`` (1: never).
    max_segments : int
        Segments kept before adjacent ones are merged, >= 1.
    merge_factor : int
        Adjacent segments merged at a time, >= 2.
    """

    deletes_allowed: float = 0.2
    max_segments: int = 10
    merge_factor: int = 10

    def __post_init__(self) -> None:
        if not 0.0 < self.deletes_allowed <= 1.0:
            raise ValueError(f"deletes_allowed must be in (0, 1], got {self.deletes_allowed}")
        if self.max_segments < 1 or self.merge_factor < 2:
            raise ValueError(
                f"max_segments must be >= 1 and merge_factor >= 2, got {self.max_segments} and "
                f"{self.merge_factor}"
            )

    def plan(self, sizes: Sequence[int], live: Sequence[int]) -> list[tuple[int, int]]:
        """Runs ``[start, stop)`` of segments to merge (each into one), given each segment's
        document count and live count; empty when nothing needs merging."""
        runs: list[tuple[int, int]] = []
        for i, (size, alive) in enumerate(zip(sizes, live, strict=True)):
            if alive and (size - alive) > self.deletes_allowed * size:
                runs.append((i, i + 1))
        remaining = sum(1 for alive in live if alive)
        if remaining > self.max_segments:
            width = min(self.merge_factor, len(live))
            best = min(range(len(live) - width + 1), key=lambda s: sum(live[s : s + width]))
            runs = [run for run in runs if run[1] <= best or run[0] >= best + width]
            runs.append((best, best + width))
        return sorted(runs)
