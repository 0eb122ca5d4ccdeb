"""The validation gate of a reranker: it is used only if it beats the fused ranking.

A reranker re-orders the fused top ``depth`` candidates of each query (``rerank``). On a
validation split held out from its training data the gate compares nDCG@10 of

- the fused order itself,
- the cross-encoder's order (``"rerank"``),
- ``rerank``'s weighted reciprocal-rank blend of the two orders (``"blend"``, per weight),

and accepts the reranker only when its best mode beats the fused ranking by more than
``min_gain``; otherwise the verdict says so and the fused ranking is served.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from hybrid_engine.evaluation.metrics import evaluate, run_from_results
from hybrid_engine.pipeline.rerank import RERANK_DEPTH, rerank
from hybrid_engine.protocols import PairScorer
from hybrid_engine.results import SearchResult

BLEND_WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""Cross-encoder weights of the blends the gate tries (``rerank``'s ``blend``; 1.0 would be plain
reranking, 0.0 the fused order)."""
METRIC = "ndcg@10"


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
        The best mode's nDCG@10 exceeds the fused ranking's by more than ``min_gain``.
    mode : str
        ``"rerank"``, ``"blend"``, or ``"fused"`` when refused (serve the fused ranking).
    blend_weight : float or None
        The reranker's weight of the winning blend (``mode == "blend"`` only).
    fused, reranked, best : float
        nDCG@10 of the fused order, the reranker's order, and the best mode.
    blended : dict of str to float
        nDCG@10 of each blend weight (keys formatted ``"0.3"``).
    queries : int
        Validation queries scored.
    min_gain : float
        The margin the best mode had to beat.
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

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON-ready values (the ``"validation"`` record of ``training.json``)."""
        return asdict(self)

    def summary(self) -> str:
        """One line: the figures and the decision."""
        decision = (
            f"accepted ({self.mode}"
            + (f", weight {self.blend_weight}" if self.mode == "blend" else "")
            + ")"
            if self.accepted
            else "refused: serving the fused ranking"
        )
        best_blend = max(self.blended.values(), default=float("nan"))
        return (
            f"validation {METRIC} over {self.queries} queries: fused {self.fused:.4f}, "
            f"reranked {self.reranked:.4f}, best blend {best_blend:.4f} -> {decision}"
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
        every row (``rerank``).
    query_ids : sequence of str
        The id of each row, distinct.
    doc_ids : sequence of str
        Corpus id of each position.
    qrels : mapping
        Query id to ``{doc id: grade}``; only the rows' queries are averaged over.
    depth : int
        Hits per row reranked (``rerank``'s ``depth``).
    blend_weights : sequence of float
        Cross-encoder weights of the blends tried (``rerank``'s ``blend``), each in [0, 1].
    min_gain : float
        The best mode must beat the fused nDCG@10 by more than this (>= 0) to be accepted.

    Returns
    -------
    GateVerdict

    Raises
    ------
    ValueError
        No rows, rows and ``queries``/``query_ids`` disagree, a negative ``min_gain``, or what
        ``rerank`` raises.
    """
    if len(fused) == 0 or not len(fused) == len(queries) == len(query_ids):
        raise ValueError(
            f"expected one query text and id per row of the fused result ({len(fused)} rows), "
            f"got {len(queries)} texts and {len(query_ids)} ids; the gate needs at least one"
        )
    if min_gain < 0:
        raise ValueError(f"min_gain must be >= 0, got {min_gain}")
    judged = {q: qrels[q] for q in query_ids if q in qrels}  # evaluate averages over qrels
    scorer = _ScoredOnce(cross_encoder)

    def ndcg(result: SearchResult) -> float:
        # Score by position: the order served is judged, never evaluate's tie-break by doc id
        # (rerank keeps equal scores in fused order).
        by_position = np.broadcast_to(
            np.arange(result.ids.shape[1], 0, -1, dtype=np.float32), result.ids.shape
        )
        run = run_from_results(result.ids, by_position, query_ids, doc_ids)
        return evaluate(run, judged, [METRIC])[METRIC]

    def reranked_by(blend: float | None) -> float:
        return ndcg(rerank(fused, queries, doc_texts, scorer, depth=depth, blend=blend))

    fused_ndcg = ndcg(fused)
    reranked = reranked_by(None)
    blended = {f"{w:g}": reranked_by(float(w)) for w in blend_weights}
    modes = [("rerank", None, reranked)] + [
        ("blend", float(key), value) for key, value in blended.items()
    ]
    mode, weight, best = max(modes, key=lambda m: m[2])  # first wins ties: rerank, low weights
    accepted = best > fused_ndcg + min_gain
    return GateVerdict(
        accepted=accepted,
        mode=mode if accepted else "fused",
        blend_weight=weight if accepted else None,
        fused=fused_ndcg,
        reranked=reranked,
        best=best if accepted else fused_ndcg,
        blended=blended,
        queries=len(query_ids),
        min_gain=min_gain,
    )
