"""A paired randomization test of several systems against one baseline, on per-query scores.

The question the reranker gate asks is "does any of these modes beat the fused ranking, on
these queries, by more than chance?", after looking at all of them. ``max_t_p_values``
answers it with a one-sided sign-flip test of the largest studentized gain (the single-step
max-T procedure of Westfall and Young): under the null hypothesis that a mode and the baseline
are exchangeable on every query, the sign of each query's difference is a coin flip; flipping
the same coin for every mode of a query keeps the modes' correlation, and comparing each mode
with the distribution of the *largest* statistic over all modes pays for choosing the best one.
Each p-value so adjusted controls the family-wise error, as Bonferroni's would, without
Bonferroni's loss of power when the modes are strongly correlated (neighbouring blend weights
rank almost alike), and every query is used for the test (splitting the queries into a half
that picks the mode and a half that tests it would halve what the test sees).
"""

from __future__ import annotations

import numpy as np

SIGN_FLIPS = 10_000
"""Random sign flips drawn: p-values resolve to about 1e-4, and a p-value near 0.05 is off by
about 0.002 (one standard error)."""
_CHUNK = 1_000
"""Flips per matrix product (memory: ``_CHUNK x n_queries`` floats)."""
_TIE = 1e-9
"""A flipped statistic this close to the observed one counts as reaching it (the identity flip
reproduces it up to rounding)."""


def check_gate_thresholds(min_gain: float, alpha: float) -> None:
    """ValueError when a validation gate's thresholds are out of range: the gain it demands,
    ``min_gain``, must be >= 0 and its significance level ``alpha`` in (0, 1)."""
    if min_gain < 0:
        raise ValueError(f"min_gain must be >= 0, got {min_gain}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")


def max_t_p_values(
    differences: np.ndarray, *, flips: int = SIGN_FLIPS, seed: int = 0
) -> np.ndarray:
    """Family-wise one-sided p-values of each mode's mean gain over the baseline.

    Parameters
    ----------
    differences : numpy.ndarray, shape (n_queries, n_modes)
        Per-query metric of each mode minus the baseline's (paired: one row per query).
    flips : int
        Random sign flips drawn (``SIGN_FLIPS``), >= 1.
    seed : int
        Seeds the flips: the same differences always give the same p-values.

    Returns
    -------
    numpy.ndarray of float64, shape (n_modes,)
        ``(1 + #{flips whose largest statistic reaches mode m's}) / (1 + flips)``, in
        ``(0, 1]``; small when mode m gains consistently. The statistic of a mode is its
        summed difference over the root of its summed squared difference (a t statistic's
        monotone equivalent under sign flips; 0 for a mode equal to the baseline on every
        query).

    Raises
    ------
    ValueError
        ``differences`` is not a 2-d array with at least one row and column, holds NaN, or
        ``flips < 1``.
    """
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 2 or 0 in d.shape or np.isnan(d).any():
        raise ValueError(
            f"differences must be a finite (n_queries, n_modes) array with n_queries, "
            f"n_modes >= 1; got shape {d.shape}"
        )
    if flips < 1:
        raise ValueError(f"flips must be >= 1, got {flips}")
    scale = np.sqrt(np.square(d).sum(axis=0))
    scale[scale == 0] = np.inf  # the mode never differs from the baseline: statistic 0
    observed = d.sum(axis=0) / scale
    rng = np.random.default_rng(seed)
    reached = np.zeros(d.shape[1], dtype=np.int64)
    for start in range(0, flips, _CHUNK):
        signs = rng.integers(0, 2, size=(min(_CHUNK, flips - start), d.shape[0])) * 2.0 - 1.0
        largest = ((signs @ d) / scale).max(axis=1)
        reached += (largest[:, None] >= observed[None, :] - _TIE).sum(axis=0)
    return (1.0 + reached) / (1.0 + flips)
