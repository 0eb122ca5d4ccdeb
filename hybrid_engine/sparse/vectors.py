"""SPLADE vectors as index input: encoder output checked, weights quantized to uint8 impacts
with one scale."""

from __future__ import annotations

from typing import Any

import numpy as np

from hybrid_engine.result import SparseVectors
from hybrid_engine.storage import delimits

IMPACT_LEVELS = 255
"""Largest quantized impact (uint8)."""


def quantize(weights: np.ndarray, scale: float) -> np.ndarray:
    """uint8 impacts ``rint(weights / scale)`` (in float64, halves to even), clipped to
    ``[0, IMPACT_LEVELS]``: a weight above ``IMPACT_LEVELS * scale`` saturates at
    ``IMPACT_LEVELS``."""
    levels = np.rint(weights.astype(np.float64) / scale)
    return np.clip(levels, 0, IMPACT_LEVELS).astype(np.uint8)


def check_scale(scale: object) -> float | None:
    """``scale`` (None, or the weight of impact 1) as a float; TypeError unless a real
    number, ValueError unless positive and finite."""
    if scale is None:
        return None
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.integer, np.floating)):
        raise TypeError(f"scale must be a float or None, got {type(scale).__name__}")
    if not np.isfinite(scale) or scale <= 0:
        raise ValueError(
            f"scale must be positive and finite, got {scale}; None derives it from the weights"
        )
    return float(scale)


def default_scale(weights: np.ndarray) -> float:
    """The scale that maps the largest weight to ``IMPACT_LEVELS`` (1.0 when none is > 0)."""
    top = float(weights.max()) if weights.size else 0.0
    return top / IMPACT_LEVELS if top > 0 else 1.0


def check_vectors(
    vectors: Any, n_texts: int, vocab_size: int, source: str = "encoder.encode returned"
) -> SparseVectors:
    """``vectors`` as a checked ``SparseVectors`` of ``n_texts`` rows; error messages begin
    with ``source``, what gave them."""
    if not isinstance(vectors, tuple) or len(vectors) != 3:
        raise TypeError(
            f"{source} {type(vectors).__name__}; a SparseEncoder returns "
            "SparseVectors(offsets, terms, weights)"
        )
    offsets, terms, weights = (np.asarray(a) for a in vectors)
    if (offsets.dtype, terms.dtype, weights.dtype) != (np.int64, np.int32, np.float32):
        raise TypeError(
            f"{source} arrays of {offsets.dtype}, {terms.dtype}, {weights.dtype}; "
            "expected int64 offsets, int32 terms, float32 weights"
        )
    if offsets.size == 0:
        raise ValueError(
            f"{source} empty offsets; CSR offsets hold one entry per row plus one ([0] for no rows)"
        )
    if offsets.shape != (n_texts + 1,) or not delimits(offsets, terms, n_texts):
        raise ValueError(
            f"{source} offsets of shape {offsets.shape} for {n_texts} texts, or "
            "offsets that do not delimit the terms"
        )
    if terms.ndim != 1 or terms.shape != weights.shape:
        raise ValueError(
            f"{source} terms of shape {terms.shape} and weights of shape {weights.shape}; "
            "expected two 1-d arrays of the same length"
        )
    if terms.size and (terms.min() < 0 or terms.max() >= vocab_size):
        raise ValueError(f"{source} term ids outside [0, {vocab_size})")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError(f"{source} negative or non-finite weights")
    return SparseVectors(offsets, terms, weights)
