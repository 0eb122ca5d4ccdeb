"""The validation gate of a fine-tuned bi-encoder: it is used only if its dense leg beats the
base model's.

On validation queries held out of its training data, the gate compares per-query nDCG@10 of
the dense leg (``DenseIndex`` top 10) built with the base model and with the fine-tuned one,
each as it is served (the prepared ONNX graph in its serving variant, int8 by default). It
accepts the new model only when the paired, one-sided sign-flip test on the per-query gains
(``significance.max_t_p_values`` with a single mode) gives ``p < alpha`` *and* the mean gain
exceeds ``min_gain``; a model no better than the base is accepted in at most ``alpha`` of
validations, and a worse one never.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.evaluation.metrics import evaluate, run_from_results
from hybrid_engine.evaluation.significance import check_gate_thresholds, max_t_p_values

METRIC = "ndcg@10"
ALPHA = 0.05
"""The false acceptance rate the gate allows for a model no better than the base."""


@dataclass(frozen=True)
class EncoderVerdict:
    """Whether a fine-tuned bi-encoder earns its place, with the figures behind the decision.

    Attributes
    ----------
    accepted : bool
        The mean gain exceeds ``min_gain`` and its one-sided p-value is below ``alpha``.
    base, tuned : float
        Mean dense nDCG@10 of the base and the fine-tuned model over the validation queries.
    gain : float
        ``tuned - base``.
    p_value : float
        One-sided sign-flip p-value of the gain, in (0, 1].
    alpha, min_gain : float
        The thresholds it was held to.
    queries : int
        Validation queries scored (those with a relevant document).
    variant, max_length : str or None, int or None
        The fine-tuned model's configuration scored (what serving loads).
    """

    accepted: bool
    base: float
    tuned: float
    gain: float
    p_value: float
    alpha: float
    min_gain: float
    queries: int
    variant: str | None = None
    max_length: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON-ready values (the ``"validation"`` record of ``training.json``)."""
        return asdict(self)

    def summary(self) -> str:
        """One line: the figures and the decision."""
        served = f" ({self.variant}, {self.max_length} tokens)" if self.variant else ""
        decision = (
            f"accepted (p={self.p_value:.4f} < {self.alpha})"
            if self.accepted
            else f"REFUSED (p={self.p_value:.4f}, needs < {self.alpha} and a gain above "
            f"{self.min_gain})"
        )
        return (
            f"validation dense {METRIC} over {self.queries} queries{served}: base "
            f"{self.base:.4f}, fine-tuned {self.tuned:.4f} (gain {self.gain:+.4f}) -> {decision}"
        )


def encoder_verdict(
    base: Mapping[str, float],
    tuned: Mapping[str, float],
    *,
    min_gain: float = 0.0,
    alpha: float = ALPHA,
    variant: str | None = None,
    max_length: int | None = None,
) -> EncoderVerdict:
    """The gate's decision from per-query scores of the base and the fine-tuned model.

    Parameters
    ----------
    base, tuned : mapping of str to float
        Query id to nDCG@10 (``dense_ndcg``), over the same queries.
    min_gain : float
        The mean gain must exceed this (>= 0).
    alpha : float
        ... and its one-sided p-value must be below this, in (0, 1).
    variant, max_length : optional
        Recorded as the configuration scored.

    Raises
    ------
    ValueError
        No queries, the two disagree on the queries, a negative ``min_gain``, or ``alpha``
        outside (0, 1).
    """
    if not base or set(base) != set(tuned):
        raise ValueError(
            f"the base and fine-tuned scores must cover the same, non-empty set of queries; "
            f"got {len(base)} and {len(tuned)} ({len(set(base) ^ set(tuned))} not in both)"
        )
    check_gate_thresholds(min_gain, alpha)
    ids = sorted(base)
    base_rows = np.array([base[q] for q in ids], dtype=np.float64)
    tuned_rows = np.array([tuned[q] for q in ids], dtype=np.float64)
    gain = float(tuned_rows.mean() - base_rows.mean())
    p_value = float(max_t_p_values((tuned_rows - base_rows)[:, None])[0])
    return EncoderVerdict(
        accepted=bool(p_value < alpha and gain > min_gain),
        base=float(base_rows.mean()),
        tuned=float(tuned_rows.mean()),
        gain=gain,
        p_value=p_value,
        alpha=alpha,
        min_gain=min_gain,
        queries=len(ids),
        variant=variant,
        max_length=max_length,
    )


def dense_ndcg(
    index: DenseIndex, queries: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]]
) -> dict[str, float]:
    """Per-query nDCG@10 of ``index``'s top 10 for ``queries`` (id to text), over those with a
    relevant document in ``qrels``."""
    ids = list(queries)
    result = index.search([queries[q] for q in ids], 10)
    run = run_from_results(result.ids, result.scores, ids, index.doc_ids)
    judged = {q: qrels[q] for q in ids if q in qrels}
    scores = evaluate(run, judged, [METRIC], per_query=True)
    return {q: float(row[METRIC]) for q, row in scores.per_query.items()}
