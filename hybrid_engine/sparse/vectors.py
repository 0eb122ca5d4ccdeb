"""SPLADE vectors as index input: encoder output checked, weights quantized to uint8 impacts."""

from __future__ import annotations

from typing import Any

import numpy as np

from hybrid_engine.results import SparseVectors
from hybrid_engine.storage import delimits

IMPACT_LEVELS = 255
"""Largest quantized impact (uint8)."""


def quantize(weights: np.ndarray, scale: float) -> np.ndarray:
    """uint8 impacts ``rint(weights / scale)`` (in float64, halves to even), clipped to
    ``[0, IMPACT_LEVELS]``."""
    levels = np.rint(weights.astype(np.float64) / scale)
    return np.clip(levels, 0, IMPACT_LEVELS).astype(np.uint8)


def check_vectors(vectors: Any, n_texts: int, vocab_size: int) -> SparseVectors:
    """``vectors`` as a checked ``SparseVectors`` of ``n_texts`` rows."""
    if not isinstance(vectors, tuple) or len(vectors) != 3:
        raise TypeError(
            f"encoder.encode returned {type(vectors).__name__}; a SparseEncoder returns "
            "SparseVectors(offsets, terms, weights)"
        )
    offsets, terms, weights = (np.asarray(a) for a in vectors)
    if (offsets.dtype, terms.dtype, weights.dtype) != (np.int64, np.int32, np.float32):
        raise TypeError(
            f"encoder.encode returned arrays of {offsets.dtype}, {terms.dtype}, {weights.dtype}; "
            "expected int64 offsets, int32 terms, float32 weights"
        )
    if offsets.shape != (n_texts + 1,) or not delimits(offsets, terms, n_texts):
        raise ValueError(
            f"encoder.encode returned offsets of shape {offsets.shape} for {n_texts} texts, or "
            "offsets that do not delimit the terms"
        )
    if terms.shape != weights.shape:
        raise ValueError(f"terms {terms.shape} and weights {weights.shape} differ in shape")
    if terms.size and (terms.min() < 0 or terms.max() >= vocab_size):
        raise ValueError(f"encoder.encode returned term ids outside [0, {vocab_size})")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("encoder.encode returned negative or non-finite weights")
    return SparseVectors(offsets, terms, weights)
