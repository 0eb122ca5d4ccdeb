"""The validation gate of a reranker: it is used only if it beats the fused ranking.

A reranker re-orders the fused top ``depth`` candidates of each query (``rerank``). On a
validation split held out from its training data the gate compares nDCG@10 of

- the fused order itself,
- the cross-encoder's order (``"rerank"``),
- ``rerank``'s weighted reciprocal-rank blend of the two orders (``"blend"``, per weight),

and accepts the reranker only when a mode's gain over the fused ranking is one the validation
queries support: a paired, one-sided sign-flip test on per-query nDCG@10 whose p-values are
adjusted for the choice among the modes (``significance.max_t_p_values``) must give
``p < alpha``, and the mean gain must exceed ``min_gain``. The best of ten modes on noise
beats the fused ranking more often than not; this test refuses it. Otherwise the verdict says
so and the fused ranking is served.

Validate the configuration that will be served: give the prepared ``CrossEncoder`` with the
variant and ``max_length`` serving loads (its truncation is the query-capped one of
``models.cross_encoder``); the verdict records both, and ``CrossEncoder.load`` defaults to
them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hybrid_engine.evaluation.metrics import evaluate, run_from_results
from hybrid_engine.evaluation.significance import check_gate_thresholds, max_t_p_values
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.pipeline.rerank import RERANK_DEPTH, rerank
from hybrid_engine.protocols import PairScorer
from hybrid_engine.result import SearchResult

BLEND_WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""Cross-encoder weights of the blends the gate tries (``rerank``'s ``blend``; 1.0 would be plain
reranking, 0.0 the fused order)."""
METRIC = "ndcg@10"
ALPHA = 0.05
"""The family-wise error the gate allows: a reranker no better than the fused ranking is
accepted in at most 5 % of validations, whichever of its modes looks best."""


class _ScoredOnce:
    """A ``PairScorer`` that scores on the first call and answers later calls from memory.

    ``rerank`` asks for the same pairs, in the same order, for every mode of one ranking.
    """

    def __init__(self, scorer: PairScorer) -> None:
        self._scorer = scorer
        self._scores: np.ndarray | None = None

    def score(self, queries: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        if self._scores is None:
            self._scores = np.asarray(self._scorer.score(queries, passages), dtype=np.float32)
        return self._scores


@dataclass(frozen=True)
class GateVerdict:
    """Whether a reranker earns its place, with the figures behind the decision.

    Attributes
    ----------
    accepted : bool
        A mode's gain over the fused nDCG@10 exceeds ``min_gain`` with an adjusted p-value
        below ``alpha``.
    mode : str
        ``"rerank"``, ``"blend"``, or ``"fused"`` when refused (serve the fused ranking).
    blend_weight : float or None
        The reranker's weight of the winning blend (``mode == "blend"`` only).
    fused, reranked, best : float
        nDCG@10 of the fused order, the reranker's order, and the accepted mode (the fused
        order's when refused).
    blended : dict of str to float
        nDCG@10 of each blend weight (keys formatted ``"0.3"``).
    queries : int
        Validation queries scored.
    min_gain : float
        The margin the mean gain had to exceed.
    p_value : float
        The accepted mode's one-sided p-value, adjusted for the choice among the modes; when
        refused, the smallest over the modes.
    alpha : float
        The level it had to be below.
    variant, max_length : str, int or None
        The cross-encoder configuration scored (a ``CrossEncoder``'s ``variant`` and
        ``max_length``): what serving must load to get these figures. None for other scorers.
    """

    accepted: bool
    mode: str
    blend_weight: float | None
    fused: float
    reranked: float
    best: float
    blended: dict[str, float]
    queries: int
    min_gain: float
    p_value: float
    alpha: float
    variant: str | None
    max_length: int | None

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON-ready values (the ``"validation"`` record of ``training.json``)."""
        return asdict(self)

    def summary(self) -> str:
        """One line: the figures and the decision."""
        served = f"{self.variant}, {self.max_length} tokens" if self.variant else "as given"
        if self.accepted:
            weight = f", weight {self.blend_weight}" if self.mode == "blend" else ""
            decision = f"accepted ({self.mode}{weight}; p={self.p_value:.4f} < {self.alpha})"
        else:
            decision = (
                f"refused (p={self.p_value:.4f}, needs < {self.alpha} over the modes and a gain "
                f"above {self.min_gain}): serving the fused ranking"
            )
        best_blend = max(self.blended.values(), default=float("nan"))
        return (
            f"validation {METRIC} over {self.queries} queries ({served}): fused "
            f"{self.fused:.4f}, reranked {self.reranked:.4f}, best blend {best_blend:.4f} -> "
            f"{decision}"
        )


def validate_reranker(
    fused: SearchResult,
    queries: Sequence[str],
    doc_texts: Sequence[str],
    cross_encoder: PairScorer,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    depth: int = RERANK_DEPTH,
    blend_weights: Sequence[float] = BLEND_WEIGHTS,
    min_gain: float = 0.0,
    alpha: float = ALPHA,
) -> GateVerdict:
    """Compare a cross-encoder reranker with the fused ranking it re-orders, on validation
    queries held out of its training data.

    Parameters
    ----------
    fused : SearchResult
        The fused ranking of the validation queries (``HybridIndex.search``), at least
        ``depth`` hits per row; nDCG@10 is taken over its first 10.
    queries : sequence of str
        The query text of each row.
    doc_texts : sequence of str
        The passage text of each corpus position (what the cross-encoder reads).
    cross_encoder : PairScorer
        ``score(queries, passages) -> float32 (n,)``; called once, over the top ``depth`` of
        every row (``rerank``). Give the prepared ``CrossEncoder`` loaded as it will be served:
        its variant and ``max_length`` are recorded.
    query_ids : sequence of str
        The id of each row, distinct.
    doc_ids : sequence of str
        Corpus id of each position.
    qrels : mapping
        Query id to ``{doc id: grade}``; only the rows' queries with a relevant document are
        averaged over and tested.
    depth : int
        Hits per row reranked (``rerank``'s ``depth``).
    blend_weights : sequence of float
        Cross-encoder weights of the blends tried (``rerank``'s ``blend``), each in [0, 1].
    min_gain : float
        A mode's mean nDCG@10 must beat the fused one by more than this (>= 0).
    alpha : float
        ... and its gain must be significant at this family-wise level, in (0, 1).

    Returns
    -------
    GateVerdict
        Accepted in the mode of the highest mean nDCG@10 among those that pass both tests
        (ties: plain reranking, then the lowest blend weight).

    Raises
    ------
    ValueError
        No rows, rows and ``queries``/``query_ids`` disagree, a negative ``min_gain``, an
        ``alpha`` outside (0, 1), or what ``rerank`` raises.

    Notes
    -----
    Validation queries are few (SciFact's training split holds out 162), so the test uses
    them all, and the choice among the ten modes is paid for by the max-T adjustment of
    ``significance.max_t_p_values`` rather than by a split into a half that picks the mode
    and a half that tests it (half the queries) or by Bonferroni (ten times the p-value,
    though the blends rank almost alike). The flips are seeded: a verdict is reproducible.
    """
    if len(fused) == 0 or not len(fused) == len(queries) == len(query_ids):
        raise ValueError(
            f"expected one query text and id per row of the fused result ({len(fused)} rows), "
            f"got {len(queries)} texts and {len(query_ids)} ids; the gate needs at least one"
        )
    check_gate_thresholds(min_gain, alpha)
    judged = {q: qrels[q] for q in query_ids if q in qrels}  # evaluate averages over qrels
    scorer = _ScoredOnce(cross_encoder)

    def ndcg(result: SearchResult) -> tuple[float, np.ndarray]:
        # Score by position: the order served is judged, never evaluate's tie-break by doc id
        # (rerank keeps equal scores in fused order).
        by_position = np.broadcast_to(
            np.arange(result.ids.shape[1], 0, -1, dtype=np.float32), result.ids.shape
        )
        run = run_from_results(result.ids, by_position, query_ids, doc_ids)
        scores = evaluate(run, judged, [METRIC], per_query=True)
        return scores.mean[METRIC], np.array([row[METRIC] for row in scores.per_query.values()])

    modes = [("rerank", None)] + [("blend", float(w)) for w in blend_weights]
    fused_mean, fused_rows = ndcg(fused)
    figures = [
        ndcg(rerank(fused, queries, doc_texts, scorer, depth=depth, blend=weight))
        for _, weight in modes
    ]
    means = [mean for mean, _ in figures]
    p_values = max_t_p_values(np.stack([rows - fused_rows for _, rows in figures], axis=1))
    passing = [
        i for i, mean in enumerate(means) if p_values[i] < alpha and mean > fused_mean + min_gain
    ]
    chosen = max(passing, key=lambda i: means[i], default=None)  # the first of equal means
    mode, weight = modes[chosen] if chosen is not None else ("fused", None)
    served = cross_encoder if isinstance(cross_encoder, CrossEncoder) else None
    return GateVerdict(
        accepted=chosen is not None,
        mode=mode,
        blend_weight=weight,
        fused=fused_mean,
        reranked=means[0],
        best=means[chosen] if chosen is not None else fused_mean,
        blended={f"{w:g}": mean for w, mean in zip(blend_weights, means[1:], strict=True)},
        queries=len(query_ids),
        min_gain=min_gain,
        p_value=float(p_values[chosen] if chosen is not None else p_values.min()),
        alpha=alpha,
        variant=served.variant if served is not None else None,
        max_length=served.max_length if served is not None else None,
    )
