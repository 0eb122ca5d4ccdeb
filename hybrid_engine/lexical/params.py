"""BM25 scoring parameters: the variant and its k1, b and delta."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hybrid_engine.lexical._formulas import METHODS


@dataclass(frozen=True)
class BM25Params:
    """Scoring parameters, fixed when the index is built.

    Parameters
    ----------
    method : {"lucene", "robertson", "atire", "bm25l", "bm25+"}
        The BM25 variant (formulas as in Kamphuis et al., ECIR 2020).
    k1 : float
        Term-frequency saturation, >= 0.
    b : float
        Length normalisation, in [0, 1].
    delta : float
        Lower bound on a matching term's contribution (bm25l and bm25+ only), >= 0.
    """

    method: str = "lucene"
    k1: float = 0.9
    b: float = 0.4
    delta: float = 0.5

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(
                f"unknown BM25 method {self.method!r}; choose one of {sorted(METHODS)}"
            )
        for name, low, high in (("k1", 0.0, np.inf), ("b", 0.0, 1.0), ("delta", 0.0, np.inf)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {type(value).__name__}")
            if not low <= value <= high:
                raise ValueError(f"{name} must be in [{low}, {high}], got {value}")
