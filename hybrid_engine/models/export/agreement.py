"""How a prepared graph's outputs are compared with a reference's, and the limits they keep.

Each model kind measures its staged fp32 graph against PyTorch (and its int8 graph against a
reference) with these figures, and states the limits a figure must keep as ``Limit`` values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Limit:
    """A bound one figure of a check must keep.

    Attributes
    ----------
    figure : str
        The figure's name (a key of the check's figures).
    bound : float
        The least (``at_least``) or the largest value allowed.
    at_least : bool
        The figure must be >= ``bound``; else <= ``bound``. NaN keeps neither.
    """

    figure: str
    bound: float
    at_least: bool = True

    def holds(self, figures: Mapping[str, float]) -> bool:
        """Whether ``figures[self.figure]`` keeps the bound."""
        value = figures[self.figure]
        return bool(value >= self.bound if self.at_least else value <= self.bound)

    def __str__(self) -> str:
        return f"{self.figure} {'>=' if self.at_least else '<='} {self.bound:g}"


def broken_limits(figures: Mapping[str, float], limits: Sequence[Limit]) -> list[str]:
    """The limits that ``figures`` break, as text (empty when all hold)."""
    return [str(limit) for limit in limits if not limit.holds(figures)]


def format_figures(figures: Mapping[str, float]) -> str:
    """``name value`` pairs for a log line: 6 decimals, or 3 digits in scientific notation
    for values below 0.001 (differences)."""
    return ", ".join(
        f"{name} {value:.6f}" if abs(value) >= 1e-3 else f"{name} {value:.2e}"
        for name, value in figures.items()
    )


def least_cosine(ours: np.ndarray, reference: np.ndarray) -> float:
    """The least cosine between matching rows of two ``(n, dim)`` arrays."""
    cosine = (ours * reference).sum(axis=1) / (
        np.linalg.norm(ours, axis=1) * np.linalg.norm(reference, axis=1)
    )
    return float(cosine.min())


def max_abs_diff(ours: np.ndarray, reference: np.ndarray) -> float:
    """The largest absolute difference between two arrays of one shape."""
    return float(np.abs(ours - reference).max())


def spearman(ours: np.ndarray, reference: np.ndarray) -> float:
    """Spearman's rank correlation of two score vectors (NaN when either is constant)."""
    ours_ranks, reference_ranks = (
        np.argsort(np.argsort(scores, kind="stable")).astype(np.float64)
        for scores in (ours, reference)
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        return float(np.corrcoef(ours_ranks, reference_ranks)[0, 1])


def max_diff_per_spread(ours: np.ndarray, reference: np.ndarray) -> float:
    """The largest absolute score difference over the standard deviation of ``reference``
    (inf when ``reference`` is constant)."""
    spread = float(np.std(reference))
    return max_abs_diff(ours, reference) / spread if spread > 0 else float("inf")
