"""Relevance: a fused score on a [0, 1] scale that means the same for every fusion method, and
the ``min_score`` threshold on it.

Fused scores live on each method's own scale: RRF's top out near ``legs / 61``, z-score fusion
is unbounded, DBSF runs a little past [0, 1]. So a fixed threshold on them silently keeps
everything or nothing (Weaviate #4315, OpenSearch neural-search #1164). Each method's fused
score maps here, monotonically, onto [0, 1] (``SCALES`` says how), so that ``min_score=0.5``
keeps the hits that scored at least half of what the best possible hit scores, whatever the
method: Meilisearch's ``rankingScoreThreshold`` does the same for its own ranking score.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hybrid_engine.pipeline.fusion import RRF_K
from hybrid_engine.result import PAD_ID, SearchResult

SCALES = {
    "rrf": "the RRF score over the best possible one, sum(weights) / (rrf_k + 1): 1 for a hit "
    "every leg ranked first",
    "minmax": "the fused score as it is: a convex mix of min-max values in [0, 1]",
    "zscore": "Phi(fused score), the standard normal CDF of the convex mix of z-scores",
    "dbsf": "the fused score clipped to [0, 1]: a convex mix of values scaled so that "
    "mean -/+ 3 std of each leg's scores is 0 and 1",
    "combsum": "the CombSUM score over the best possible one, sum(weights)",
    "combmnz": "the CombMNZ score over the best possible one, sum(weights) x the legs fused",
}
"""How each fusion method's score maps onto the [0, 1] relevance scale."""


def relevance(
    scores: np.ndarray, method: str, weights: Sequence[float] | None, n_lists: int
) -> np.ndarray:
    """The relevance in [0, 1] of fused ``scores`` (``fuse``'s output of ``n_lists`` results
    with ``weights``, None: 1 each), by ``SCALES``; -inf where the score is (padding).

    The map is increasing for a given search, so a row's order is its relevance order.
    """
    total = float(np.sum(weights)) if weights is not None else float(n_lists)
    with np.errstate(invalid="ignore"):
        if method == "rrf":
            values = scores / (total / (RRF_K + 1))
        elif method == "zscore":
            erf = np.vectorize(math.erf, otypes=[np.float64])
            values = 0.5 * (1.0 + erf(scores.astype(np.float64) / math.sqrt(2.0)))
        elif method == "combsum":
            values = scores / total
        elif method == "combmnz":
            values = scores / (total * n_lists)
        else:  # minmax, dbsf: convex mixes, [0, 1] up to DBSF's tails
            values = scores
    out = np.clip(values, 0.0, 1.0).astype(np.float32)
    return np.where(np.isfinite(scores), out, -np.inf).astype(np.float32)


def above(result: SearchResult, values: np.ndarray, min_score: float) -> SearchResult:
    """``result`` without the hits whose relevance ``values`` is below ``min_score``: padding
    in their place (a suffix of each row, rows being in relevance order)."""
    low = values < min_score
    return SearchResult(
        np.where(low, PAD_ID, result.ids), np.where(low, -np.inf, result.scores).astype(np.float32)
    )


def relevance_of(ids: np.ndarray, fused_ids: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The relevance of each hit of ``ids`` (a reranked or diversified ranking of the fused
    hits), read from the fused ranking's ``fused_ids`` and their ``values``; -inf on padding."""
    out = np.full(ids.shape, -np.inf, np.float32)
    for row in range(len(ids)):
        known = fused_ids[row] != PAD_ID
        order = np.argsort(fused_ids[row][known])
        sorted_ids = fused_ids[row][known][order]
        hit = ids[row] != PAD_ID
        at = np.searchsorted(sorted_ids, ids[row][hit])
        out[row, hit] = values[row][known][order][at]
    return out
