"""The max-T sign-flip test against exact enumeration of every sign vector."""

import itertools

import numpy as np
import pytest

from hybrid_engine.evaluation.encoder_gate import encoder_verdict
from hybrid_engine.evaluation.significance import check_gate_thresholds, max_t_p_values


def exact_p_values(differences: np.ndarray) -> np.ndarray:
    """The same p-values over all 2^n sign vectors, by plain loops (no shortcuts)."""
    n, m = differences.shape
    scale = [np.sqrt(sum(differences[q, j] ** 2 for q in range(n))) for j in range(m)]

    def statistic(signs, j):
        if scale[j] == 0:
            return 0.0
        return sum(signs[q] * differences[q, j] for q in range(n)) / scale[j]

    observed = [statistic([1] * n, j) for j in range(m)]
    largest = [max(statistic(s, j) for j in range(m)) for s in itertools.product((1, -1), repeat=n)]
    return np.array([np.mean([x >= observed[j] - 1e-12 for x in largest]) for j in range(m)])


def test_monte_carlo_p_values_match_exact_enumeration() -> None:
    rng = np.random.default_rng(0)
    differences = rng.normal(0.05, 0.2, size=(10, 4))
    differences[:, 3] = differences[:, 2] + rng.normal(0, 0.01, 10)  # correlated modes
    exact = exact_p_values(differences)
    estimated = max_t_p_values(differences, flips=20_000)
    np.testing.assert_allclose(estimated, exact, atol=0.01)  # 3.5 standard errors at p=0.5


def test_adjustment_for_the_choice_of_mode() -> None:
    rng = np.random.default_rng(1)
    one = rng.normal(0.1, 0.3, size=(30, 1))
    alone = max_t_p_values(one)[0]
    with_noise = max_t_p_values(np.hstack([one, rng.normal(0, 0.3, size=(30, 9))]))[0]
    assert with_noise > alone  # nine more chances to look good raise the bar
    twins = max_t_p_values(np.hstack([one] * 10))  # identical modes: one choice, no penalty
    np.testing.assert_allclose(twins, alone)


def test_edges() -> None:
    assert max_t_p_values(np.zeros((5, 3))).tolist() == [1.0] * 3  # never differs: p = 1
    strong = max_t_p_values(np.full((20, 1), 0.3), flips=999)
    assert strong[0] == pytest.approx(1 / 1000)  # only the identity flip reaches it
    assert max_t_p_values(np.ones((1, 1)), flips=1000, seed=3)[0] == pytest.approx(0.5, abs=0.05)
    for bad in (np.zeros((0, 2)), np.zeros(3), np.array([[np.nan]])):
        with pytest.raises(ValueError, match="n_queries, n_modes"):
            max_t_p_values(bad)
    with pytest.raises(ValueError, match="flips"):
        max_t_p_values(np.ones((2, 1)), flips=0)


def test_gate_thresholds_are_checked_alike_by_both_gates() -> None:
    check_gate_thresholds(0.0, 0.05)
    for min_gain, alpha, message in ((-0.1, 0.05, "min_gain must be >= 0"), (0.0, 1.0, "alpha")):
        with pytest.raises(ValueError, match=message):
            check_gate_thresholds(min_gain, alpha)
        with pytest.raises(ValueError, match=message):
            encoder_verdict({"q": 0.5}, {"q": 0.6}, min_gain=min_gain, alpha=alpha)
