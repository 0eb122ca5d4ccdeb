"""Vectors from the caller, checked and prepared for the dense index: one float32 C-contiguous
copy of finite values, unit rows under cosine; ids given with vectors; growable row buffers."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_NORM_CHUNK = 1 << 16  # rows normalised at once (bounds the float64 temporaries)


def as_matrix(data: object, what: str) -> np.ndarray:
    """``data`` as a new float32 C-contiguous ``(n, dim)`` array of finite values."""
    try:
        array = np.asarray(data)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{what} must be a numeric array of shape (dim,) or (n, dim); numpy cannot read it "
            f"as one ({exc})"
        ) from None
    if array.dtype.kind not in "fiu":
        raise TypeError(
            f"{what} must be numeric (float32-convertible), got an array of dtype {array.dtype}"
        )
    if array.ndim not in (1, 2):
        raise ValueError(f"{what} must have shape (dim,) or (n, dim), got shape {array.shape}")
    with np.errstate(over="ignore"):
        matrix = np.array(array.reshape(1, -1) if array.ndim == 1 else array, np.float32, order="C")
    bad = ~np.isfinite(matrix).all(axis=1)
    if bad.any():
        raise ValueError(
            f"{what} row {np.flatnonzero(bad)[0]} holds NaN or infinite values (or values "
            "beyond the float32 range); remove or fix that row"
        )
    return matrix


def prepare(data: object, what: str, metric: str, dim: int | None = None) -> np.ndarray:
    """``as_matrix(data)``, of dimension ``dim`` when given, scaled to unit rows under cosine.

    Raises
    ------
    TypeError
        Data that is not a numeric array.
    ValueError
        Another shape or dimension, NaN or inf, or (cosine) an all-zero row.
    """
    matrix = as_matrix(data, what)
    if dim is not None and matrix.shape[1] != dim:
        raise ValueError(
            f"{what} have dimension {matrix.shape[1]}, the index's vectors {dim}; use vectors "
            "from the model that built the index"
        )
    if matrix.shape[1] == 0:
        raise ValueError(f"{what} have shape {matrix.shape}; give vectors of dimension >= 1")
    if metric == "cosine":
        normalise(matrix, what)
    return matrix


def normalise(matrix: np.ndarray, what: str) -> None:
    """Scale every row of a float32 matrix to unit L2 norm, in place (norms in float64)."""
    for lo in range(0, len(matrix), _NORM_CHUNK):
        part = matrix[lo : lo + _NORM_CHUNK]
        norms = np.sqrt(np.einsum("ij,ij->i", part, part, dtype=np.float64))
        if not norms.all():
            raise ValueError(
                f"{what} row {lo + np.flatnonzero(norms == 0)[0]} is all zeros, so its cosine "
                "similarity is undefined; remove that row, or use metric='ip'"
            )
        part /= norms[:, None]


def vector_ids(ids: Sequence[str] | None, count: int) -> list[str | None]:
    """The ids given with ``count`` vectors, checked (None: positions)."""
    if ids is None:
        return [None] * count
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise TypeError(f"ids must be a sequence of str, got {type(ids).__name__}")
    if len(ids) != count:
        raise ValueError(f"ids has {len(ids)} entries for {count} vectors; give one per vector")
    for position, doc_id in enumerate(ids):
        if not isinstance(doc_id, str):
            raise TypeError(f"ids[{position}] is {type(doc_id).__name__}, expected str")
    return list(ids)


def added_ids(ids: Sequence[str] | None, count: int, explicit: bool) -> list[str | None]:
    """The ids of ``count`` vectors added to an index whose ids are ``explicit`` (or
    positions): required then, refused otherwise, checked as ``vector_ids``."""
    if ids is None and explicit:
        raise ValueError("the indexed documents have ids; pass ids= with one str per new vector")
    if ids is not None and not explicit:
        raise ValueError(
            "the indexed documents have no ids (their ids are positions); add vectors without ids="
        )
    return vector_ids(ids, count)


def grown(buffer: np.ndarray, used: int, extra: int) -> np.ndarray:
    """``buffer``, or a copy of its first ``used`` rows with room for at least ``extra`` more."""
    if used + extra <= len(buffer):
        return buffer
    grown = np.empty((max(used + extra, 2 * len(buffer)), buffer.shape[1]), dtype=buffer.dtype)
    grown[:used] = buffer[:used]
    return grown


def max_norm(vectors: np.ndarray) -> float:
    """The largest row L2 norm, rounded up a little (float32 sums)."""
    squares = np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64)
    return float(np.sqrt(squares.max())) * (1 + 1e-6) if len(squares) else 0.0
