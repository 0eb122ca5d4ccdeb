"""Fuzzed numpy arrays: the values, dtypes and shapes the vector harnesses feed an index."""

from __future__ import annotations

from typing import Any

import atheris
import numpy as np

DTYPES = (
    np.float32,
    np.float64,
    np.float16,
    np.int64,
    np.int32,
    np.int8,
    np.uint8,
    np.uint64,
    np.bool_,
    np.complex64,
    np.dtype(">f4"),
    np.dtype(">i8"),
    object,
    str,
)
"""Dtypes a fuzzed array may take: the right ones, their relatives, and wrong kinds."""
SPECIAL = (0.0, -0.0, 1.0, -1.0, np.nan, np.inf, -np.inf, 1e-45, 3.4e38, 1e39, 1e308, -3e38)
"""Float values picked more often than chance would."""


def floats(fdp: atheris.FuzzedDataProvider, count: int) -> list[float]:
    out = []
    for _ in range(count):
        pick = fdp.ConsumeIntInRange(0, 3)
        if pick == 0:
            out.append(float(fdp.PickValueInList(list(SPECIAL))))
        elif pick == 1:
            out.append(fdp.ConsumeFloat())
        else:
            out.append(fdp.ConsumeIntInRange(-4, 4) / 4)
    return out


def retyped(fdp: atheris.FuzzedDataProvider, array: np.ndarray, right: Any) -> Any:
    """``array`` as dtype ``right`` usually; sometimes as another dtype, a list, a strided or
    Fortran-ordered view, or reshaped."""
    pick = fdp.ConsumeIntInRange(0, 15)
    if pick == 0:
        dtype = fdp.PickValueInList(list(DTYPES))
        with np.errstate(all="ignore"):
            try:
                return array.astype(dtype)
            except (ValueError, TypeError, OverflowError):
                return array
    if pick == 1:
        return array.tolist()
    if pick == 2 and array.ndim == 2:
        return np.asfortranarray(array.astype(right))
    if pick == 3:
        return np.repeat(array.astype(right), 2, axis=0)[::2]
    if pick == 4:
        return array.astype(right).reshape(1, *array.shape)
    if pick == 5:
        return array.astype(right).reshape(-1)[: max(array.size - 1, 0)]
    with np.errstate(all="ignore"):
        return array.astype(right)
