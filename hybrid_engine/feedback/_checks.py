"""The parameter check the feedback methods share: a real number within bounds."""

from __future__ import annotations

import math

import numpy as np


def check_number(
    name: str, value: object, low: float, high: float, *, open_low: bool = False
) -> float:
    """``value`` as a ``float`` in ``[low, high]`` (``(low, high]`` with ``open_low``).

    Raises
    ------
    TypeError
        ``value`` is not a real number (bools are not).
    ValueError
        ``value`` is NaN or outside the bounds; the message names the argument and the bounds.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    number = float(value)
    inside = (low < number if open_low else low <= number) and number <= high
    if math.isnan(number) or not inside:
        bounds = f"{'(' if open_low else '['}{low}, {high}]"
        raise ValueError(f"{name} must be in {bounds}, got {value!r}")
    return number
