"""The reranker validation gate against hand-computed nDCG@10 and pytrec_eval, with stand-in
rerankers: figures by hand, a paired test that refuses noise and accepts real gains, and the
served configuration recorded."""

import math

import numpy as np
import pytest

from hybrid_engine.evaluation.gate import validate_reranker
from hybrid_engine.result import SearchResult

DOC_IDS = ["d0", "d1", "d2", "d3"]
TEXTS = ["text 0", "text 1", "text 2", "text 3"]
QUERIES = ["query 1", "query 2"]
# Fused order of both queries: d0, d1, d2, d3. q1's relevant document is d2, q2's is d0.
CANDIDATES = np.array([[0, 1, 2, 3], [0, 1, 2, 3]], dtype=np.int64)
FUSED = SearchResult(CANDIDATES, np.tile(np.float32([4, 3, 2, 1]), (2, 1)))
QRELS = {"q1": {"d2": 1}, "q2": {"d0": 1}, "q_unused": {"d3": 1}}
QUERY_IDS = ["q1", "q2"]
COPIES = 20
"""Validation sets of ``COPIES`` queries like q1 and as many like q2: enough for a test."""


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


def gate(grid, fused=FUSED, copies=1, **options):
    """The verdict on ``copies`` copies of the two queries (ids q1-0, q2-0, q1-1, ...)."""
    query_ids = [f"{q}-{k}" for k in range(copies) for q in QUERY_IDS] if copies > 1 else QUERY_IDS
    qrels = {q: QRELS[q.split("-")[0]] for q in query_ids}
    rows = SearchResult(np.tile(fused.ids, (copies, 1)), np.tile(fused.scores, (copies, 1)))
    scorer = GridScorer(grid)
    verdict = validate_reranker(
        rows, QUERIES * copies, TEXTS, scorer, query_ids, DOC_IDS, qrels, depth=4, **options
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
    # Two queries cannot support any gain: of the 4 sign flips, 2 reach the observed one.
    assert not verdict.accepted and verdict.p_value >= 0.25
    verdict = gate(scores, copies=COPIES)
    assert verdict.fused == pytest.approx(0.75) and verdict.reranked == pytest.approx(1.0)
    assert verdict.accepted and verdict.mode == "rerank" and verdict.blend_weight is None
    assert verdict.best == pytest.approx(1.0) and verdict.queries == 2 * COPIES
    assert verdict.p_value < 0.001
    assert verdict.variant is None and verdict.max_length is None  # not a CrossEncoder


def test_bad_reranker_refused() -> None:
    # Reverses the fused order: q1's d2 moves to rank 2 (better), q2's d0 to rank 4 (worse).
    scores = [[0.0, 1.0, 2.0, 3.0], [0.0, 1.0, 2.0, 3.0]]
    verdict = gate(scores, copies=COPIES)
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
    verdict = gate(scores, copies=COPIES)
    assert verdict.reranked == pytest.approx((1.0 + 0.5) / 2) == pytest.approx(verdict.fused)
    assert verdict.blended["0.5"] == pytest.approx((1 / math.log2(3) + 1.0) / 2)
    assert verdict.accepted and verdict.mode == "blend"
    assert verdict.best == max(verdict.blended.values()) > verdict.reranked
    assert verdict.p_value < 0.001


def test_min_gain_and_padding() -> None:
    scores = [[0.0, 0.0, 5.0, 7.0], [3.0, 2.0, 1.0, 0.0]]
    padded = CANDIDATES.copy()
    padded[0, 3] = -1  # the reranker's favourite is padding: never scored
    fused = SearchResult(padded, np.where(padded >= 0, FUSED.scores, -np.inf).astype(np.float32))
    verdict = gate(scores, fused, copies=COPIES, min_gain=0.6)
    assert verdict.reranked == pytest.approx(1.0)
    assert not verdict.accepted  # gain 0.25 is significant but not above 0.6
    assert gate(scores, fused, copies=COPIES, min_gain=0.2).accepted
    with pytest.raises(ValueError, match="one query text and id per row"):
        validate_reranker(FUSED, QUERIES[:1], TEXTS, GridScorer(scores), QUERY_IDS, DOC_IDS, QRELS)
    with pytest.raises(ValueError, match="min_gain"):
        gate(scores, min_gain=-1)
    with pytest.raises(ValueError, match="alpha"):
        gate(scores, alpha=1.5)


# A larger validation set on which a fused ranking carries no signal: each query's 30
# candidates hold its 2 relevant documents at random positions. A scorer of random numbers
# is then pure noise, and one that reads the qrels is as good as a reranker can be.
N_QUERIES = 60
DEPTH = 30
NOISE_SEEDS = range(20)


def _uninformative_set() -> tuple[SearchResult, list[str], list[str], dict, list[str], list[str]]:
    rng = np.random.default_rng(7)
    n_docs = 400
    doc_ids = [f"doc{i}" for i in range(n_docs)]
    texts = [f"passage {i}" for i in range(n_docs)]
    ids = np.stack([rng.choice(n_docs, DEPTH, replace=False) for _ in range(N_QUERIES)])
    query_ids = [f"v{q}" for q in range(N_QUERIES)]
    qrels = {
        q: {doc_ids[ids[row, p]]: int(rng.integers(1, 3)) for p in rng.choice(DEPTH, 2, False)}
        for row, q in enumerate(query_ids)
    }
    scores = np.tile(np.arange(DEPTH, 0, -1, dtype=np.float32), (N_QUERIES, 1))
    queries = [f"question {q}" for q in range(N_QUERIES)]
    return SearchResult(ids.astype(np.int64), scores), queries, texts, qrels, query_ids, doc_ids


class NoiseScorer:
    """Seeded random scores: whatever it "gains" is chance."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def score(self, queries, passages) -> np.ndarray:
        return self.rng.standard_normal(len(passages)).astype(np.float32)


class OracleScorer:
    """Scores a pair by its judged grade: the qrels' own ranking."""

    def __init__(self, queries, query_ids, texts, doc_ids, qrels) -> None:
        self.grade = {
            (queries[row], texts[doc_ids.index(doc)]): grade
            for row, q in enumerate(query_ids)
            for doc, grade in qrels[q].items()
        }

    def score(self, queries, passages) -> np.ndarray:
        return np.array([self.grade.get(pair, 0) for pair in zip(queries, passages)], np.float32)


def _pytrec_ndcg(result: SearchResult, query_ids, doc_ids, qrels) -> float:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run = {
        q: {doc_ids[d]: float(DEPTH - rank) for rank, d in enumerate(row)}
        for q, row in zip(query_ids, result.ids)
    }
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return float(np.mean([per_query[q]["ndcg_cut_10"] for q in query_ids]))


def test_a_noise_reranker_is_refused_though_its_best_mode_beats_fused() -> None:
    fused, queries, texts, qrels, query_ids, doc_ids = _uninformative_set()
    expected_fused = _pytrec_ndcg(fused, query_ids, doc_ids, qrels)
    beaten = 0
    for seed in NOISE_SEEDS:
        verdict = validate_reranker(
            fused, queries, texts, NoiseScorer(seed), query_ids, doc_ids, qrels, depth=DEPTH
        )
        assert verdict.fused == pytest.approx(expected_fused)
        beaten += max(verdict.reranked, *verdict.blended.values()) > verdict.fused
        assert not verdict.accepted, f"seed {seed}: {verdict.summary()}"
    assert beaten >= len(NOISE_SEEDS) // 2  # selection on noise "wins" often; the test sees it


def test_an_oracle_reranker_is_accepted_with_a_small_p_value() -> None:
    fused, queries, texts, qrels, query_ids, doc_ids = _uninformative_set()
    oracle = OracleScorer(queries, query_ids, texts, doc_ids, qrels)
    verdict = validate_reranker(
        fused, queries, texts, oracle, query_ids, doc_ids, qrels, depth=DEPTH
    )
    assert verdict.accepted and verdict.mode == "rerank"
    assert verdict.reranked == pytest.approx(1.0)  # both relevant documents first, best grade first
    assert verdict.p_value < 0.01 and verdict.alpha == 0.05
    assert "p=" in verdict.summary()


def test_the_served_configuration_is_validated_recorded_and_loaded(
    tiny_cross_encoder_source, tmp_path
) -> None:
    from hybrid_engine.models.cross_encoder import CrossEncoder
    from hybrid_engine.models.export.cross_encoder import prepare_cross_encoder
    from hybrid_engine.pipeline.rerank import reranker_verdict

    verdicts = []

    def validate(staged, variant):  # what the trainer's gate does, on a small set
        served = CrossEncoder.load(staged, variant=variant, max_length=24)
        verdicts.append(
            validate_reranker(FUSED, QUERIES, TEXTS, served, QUERY_IDS, DOC_IDS, QRELS, depth=4)
        )
        return {"validation": verdicts[-1].to_dict()}

    folder = prepare_cross_encoder(tiny_cross_encoder_source, tmp_path / "ce", validate=validate)
    (verdict,) = verdicts
    assert (verdict.variant, verdict.max_length) == ("int8", 24)  # int8 kept, so it serves
    loaded = CrossEncoder.load(folder)  # defaults: the validated configuration
    assert (loaded.variant, loaded.max_length) == ("int8", 24)
    assert loaded.training == {"validation": verdict.to_dict()}
    decision = reranker_verdict(loaded.name, loaded.training)
    assert (decision.variant, decision.max_length) == ("int8", 24)
    assert "int8, 24 tokens" in decision.message and "p=" in decision.message
    other = CrossEncoder.load(folder, variant="fp32", max_length=16)  # explicit: as asked
    assert (other.variant, other.max_length) == ("fp32", 16)
