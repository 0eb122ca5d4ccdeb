"""What ``pick`` reports: each candidate stack's figures, the choice rule under a latency
budget, and the recommendation (measured on judged queries, or by rule from corpus
statistics)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from hybrid_engine.evaluation.corpus_stats import CorpusStatistics
from hybrid_engine.evaluation.significance import max_t_p_values
from hybrid_engine.pipeline.stack import Stack

QUALITY = "ndcg@10"
"""The metric the choice maximises."""
RECALL = "recall@100"
"""The second metric reported (the candidates a reranker could see)."""
TIE_DECIMALS = 4
"""nDCG@10 equal to this many decimals (as the table prints it) is a tie: the faster wins."""
ALPHA = 0.05
"""A costlier stack is recommended over a simpler one only if its nDCG@10 gain on the judged
queries has a one-sided paired sign-flip p-value below this (``simplest_supported``)."""


@dataclass(frozen=True)
class StackFigures:
    """One candidate stack measured on judged queries.

    Attributes
    ----------
    name : str
        The candidate, e.g. ``"hybrid-rrf"``.
    stack : Stack
        Its configuration.
    ndcg_at_10, recall_at_100 : float
        Means over the judged queries (``evaluation.metrics``, pytrec_eval's definitions).
    p50_ms, p95_ms : float
        Milliseconds per query, one query per call from its text (``scoring.query_latency``).
    eval_args : tuple of str
        The ``hybrid-engine eval`` options that score this configuration, e.g.
        ``("--retriever", "hybrid", "--fusion", "rrf")``.
    per_query : tuple of float
        nDCG@10 of each judged query, in one query order shared by every candidate of a
        report (the paired test of ``simplest_supported``); empty: not recorded.
    """

    name: str
    stack: Stack
    ndcg_at_10: float
    recall_at_100: float
    p50_ms: float
    p95_ms: float
    eval_args: tuple[str, ...] = ()
    per_query: tuple[float, ...] = field(default=(), repr=False, compare=False)

    @property
    def model_stages(self) -> int:
        """The model calls a query costs: one per neural leg (dense, SPLADE) and one for
        the reranker; BM25 needs none."""
        neural = sum(leg != "bm25" for leg in self.stack.retrievers)
        return neural + (self.stack.rerank is not None)

    def row(self) -> dict[str, float]:
        """The table and plot row: ``ndcg@10``, ``recall@100``, ``p50_ms``, ``p95_ms``."""
        return {
            QUALITY: self.ndcg_at_10,
            RECALL: self.recall_at_100,
            "p50_ms": self.p50_ms,
            "p95_ms": self.p95_ms,
        }

    def to_dict(self) -> dict[str, Any]:
        """``row`` with the stack, the eval options and the per-query nDCG@10."""
        return {
            **self.row(),
            "stack": self.stack.to_dict(),
            "eval_args": list(self.eval_args),
            "per_query_ndcg@10": list(self.per_query),
        }


def choose(candidates: Sequence[StackFigures], budget_ms: float) -> tuple[StackFigures, bool]:
    """The candidate to recommend under ``budget_ms``, and whether it is within the budget.

    The best nDCG@10 among those whose p95 latency is at most ``budget_ms`` (a tie at
    ``TIE_DECIMALS`` decimals goes to the lower p95); when none is within the budget, the one
    of lowest p95 (a tie there goes to the better nDCG@10).

    Raises
    ------
    ValueError
        No candidates.
    """
    if not candidates:
        raise ValueError("no candidate stacks to choose from; give at least one")
    within = [c for c in candidates if c.p95_ms <= budget_ms]
    if within:
        return min(within, key=lambda c: (-round(c.ndcg_at_10, TIE_DECIMALS), c.p95_ms)), True
    return min(candidates, key=lambda c: (c.p95_ms, -c.ndcg_at_10)), False


def simplest_supported(
    best: StackFigures, candidates: Sequence[StackFigures], budget_ms: float
) -> tuple[StackFigures, float | None]:
    """``best``, or a stack of fewer model stages whose nDCG@10 it does not beat by more than
    chance on the judged queries.

    A costlier stack has to earn its place: among the candidates within ``budget_ms`` of
    fewer ``model_stages`` than ``best``, from the fewest up, the best of each tier is tried;
    the first that ``best``'s per-query gain over it does not support (one-sided paired
    sign-flip test, ``significance.max_t_p_values``, p >= ``ALPHA``) is recommended instead.
    A small gain picked on the user's queries is as likely to vanish on new ones.

    Returns
    -------
    (StackFigures, float or None)
        The recommendation and the p-value of ``best``'s gain over it (None: ``best``
        itself, no simpler stack being as good).

    Raises
    ------
    ValueError
        Candidates whose ``per_query`` values are of different lengths.
    """
    if not best.per_query:
        return best, None
    simpler = [
        c
        for c in candidates
        if c.p95_ms <= budget_ms and c.model_stages < best.model_stages and c.per_query
    ]
    for tier in sorted({c.model_stages for c in simpler}):
        rival = max(
            (c for c in simpler if c.model_stages == tier), key=lambda c: (c.ndcg_at_10, -c.p95_ms)
        )
        if len(rival.per_query) != len(best.per_query):
            raise ValueError(
                f"{best.name} and {rival.name} were scored on different queries "
                f"({len(best.per_query)} and {len(rival.per_query)} values)"
            )
        gain = np.subtract(best.per_query, rival.per_query)[:, None]
        p_value = float(max_t_p_values(gain)[0])
        if p_value >= ALPHA:
            return rival, p_value
    return best, None


@dataclass(frozen=True)
class PickReport:
    """A recommended stack and what it rests on.

    Attributes
    ----------
    dataset : str
        The collection's name.
    basis : {"measured", "rule"}
        ``"measured"``: the candidates were scored on judged queries and timed here;
        ``"rule"``: no judged queries, the stack follows from corpus statistics alone (a
        rule, not a measurement).
    name : str
        The recommended candidate (``"rule"`` for a rule-based one).
    stack : Stack
        The recommended configuration; ``HybridIndex.build(corpus, stack=...)`` and
        ``search(..., stack=...)`` take it.
    budget_ms : float
        The p95 latency budget per query.
    reason : str
        One line: why this stack.
    split : str, optional
        The qrels split measured (None for a rule).
    n_queries : int, optional
        Its judged queries (None for a rule).
    within_budget : bool, optional
        Whether the measured p95 is within the budget (None for a rule: nothing was timed).
    candidates : tuple of StackFigures
        Every candidate measured, in the order measured (empty for a rule).
    eval_command : str, optional
        The ``hybrid-engine eval`` command that reproduces the recommended figure on the same
        split (None for a rule).
    statistics : CorpusStatistics, optional
        The corpus statistics the rules read (None when measured).
    notes : tuple of str
        Further advice (chunking of long documents, refused configurations, ...).
    """

    dataset: str
    basis: Literal["measured", "rule"]
    name: str
    stack: Stack
    budget_ms: float
    reason: str
    split: str | None = None
    n_queries: int | None = None
    within_budget: bool | None = None
    candidates: tuple[StackFigures, ...] = ()
    eval_command: str | None = None
    statistics: CorpusStatistics | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def recommended(self) -> StackFigures | None:
        """The recommended candidate's figures (None for a rule)."""
        return next((c for c in self.candidates if c.name == self.name), None)

    def headline(self) -> str:
        """The one line that says what was recommended and on which basis."""
        if self.basis == "rule":
            return (
                f"RULE, not a measurement (no judged queries): {self.stack.describe()}. "
                f"{self.reason}"
            )
        return (
            f"MEASURED on {self.n_queries} judged {self.split} queries: {self.name} "
            f"({self.stack.describe()}). {self.reason}"
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``hybrid-engine pick --json``."""
        return {
            "dataset": self.dataset,
            "basis": self.basis,
            "split": self.split,
            "n_queries": self.n_queries,
            "budget_ms": self.budget_ms,
            "recommended": self.name,
            "stack": self.stack.to_dict(),
            "description": self.stack.describe(),
            "within_budget": self.within_budget,
            "reason": self.reason,
            "eval_command": self.eval_command,
            "notes": list(self.notes),
            "statistics": None if self.statistics is None else self.statistics.to_dict(),
            "candidates": {c.name: c.to_dict() for c in self.candidates},
        }
