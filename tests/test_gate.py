"""The reranker validation gate against hand-computed nDCG@10, with stand-in rerankers."""

import math

import numpy as np
import pytest

from hybrid_engine.evaluation.gate import validate_reranker
from hybrid_engine.results import SearchResult

DOC_IDS = ["d0", "d1", "d2", "d3"]
TEXTS = ["text 0", "text 1", "text 2", "text 3"]
QUERIES = ["query 1", "query 2"]
# Fused order of both queries: d0, d1, d2, d3. q1's relevant document is d2, q2's is d0.
CANDIDATES = np.array([[0, 1, 2, 3], [0, 1, 2, 3]], dtype=np.int64)
FUSED = SearchResult(CANDIDATES, np.tile(np.float32([4, 3, 2, 1]), (2, 1)))
QRELS = {"q1": {"d2": 1}, "q2": {"d0": 1}, "q_unused": {"d3": 1}}
QUERY_IDS = ["q1", "q2"]


class GridScorer:
    """Scores (query i, text j) as ``grid[i][j]``; counts its calls."""

    def __init__(self, grid: list[list[float]]) -> None:
        self.grid = grid
        self.calls = 0

    def score(self, queries, passages) -> np.ndarray:
        self.calls += 1
        return np.array(
            [self.grid[QUERIES.index(q)][TEXTS.index(p)] for q, p in zip(queries, passages)],
            np.float32,
        )


def gate(grid, fused=FUSED, **options):
    scorer = GridScorer(grid)
    verdict = validate_reranker(
        fused, QUERIES, TEXTS, scorer, QUERY_IDS, DOC_IDS, QRELS, depth=4, **options
    )
    assert scorer.calls == 1  # every mode re-uses one scoring pass
    return verdict


def test_fused_ndcg_by_hand_and_good_reranker_accepted() -> None:
    # A reranker that puts q1's d2 first and keeps q2's d0 first.
    scores = [[0.0, 0.0, 5.0, 0.0], [3.0, 2.0, 1.0, 0.0]]
    verdict = gate(scores)
    # Fused: q1 finds d2 at rank 3 -> 1/log2(4) = 0.5; q2 finds d0 at rank 1 -> 1.
    # q_unused is not a validation query, so it is not averaged in.
    assert verdict.fused == pytest.approx((0.5 + 1.0) / 2)
    assert verdict.reranked == pytest.approx(1.0)
    assert verdict.accepted and verdict.mode == "rerank" and verdict.blend_weight is None
    assert verdict.best == pytest.approx(1.0) and verdict.queries == 2


def test_bad_reranker_refused() -> None:
    # Reverses the fused order: q1's d2 moves to rank 2 (better), q2's d0 to rank 4 (worse).
    scores = [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]]
    verdict = gate(scores)
    reranked = (1 / math.log2(3) + 1 / math.log2(5)) / 2
    assert verdict.reranked == pytest.approx(reranked)
    assert verdict.reranked < verdict.fused
    assert not verdict.accepted and verdict.mode == "fused" and verdict.blend_weight is None
    assert verdict.best == verdict.fused
    assert "refused" in verdict.summary()


def test_blend_wins_when_it_keeps_the_fused_strengths() -> None:
    # q1: the reranker lifts the relevant d2 (fused rank 3) to the top; q2: it sinks the
    # relevant d0 (fused rank 1) to rank 3. An even blend lifts q1's d2 to rank 2 and keeps
    # q2's d0 first.
    scores = [[0.0, 0.0, 9.0, 0.0], [0.0, 5.0, 0.0, 9.0]]
    verdict = gate(scores)
    assert verdict.reranked == pytest.approx((1.0 + 0.5) / 2) == pytest.approx(verdict.fused)
    assert verdict.blended["0.5"] == pytest.approx((1 / math.log2(3) + 1.0) / 2)
    assert verdict.accepted and verdict.mode == "blend"
    assert verdict.best == max(verdict.blended.values()) > verdict.reranked


def test_min_gain_and_padding() -> None:
    scores = [[0.0, 0.0, 5.0, 7.0], [3.0, 2.0, 1.0, 0.0]]
    padded = CANDIDATES.copy()
    padded[0, 3] = -1  # the reranker's favourite is padding: never scored
    fused = SearchResult(padded, np.where(padded >= 0, FUSED.scores, -np.inf).astype(np.float32))
    verdict = gate(scores, fused, min_gain=0.6)
    assert verdict.reranked == pytest.approx(1.0)
    assert not verdict.accepted  # gain 0.25 is not above 0.6
    with pytest.raises(ValueError, match="one query text and id per row"):
        validate_reranker(FUSED, QUERIES[:1], TEXTS, GridScorer(scores), QUERY_IDS, DOC_IDS, QRELS)
    with pytest.raises(ValueError, match="min_gain"):
        gate(scores, min_gain=-1)
