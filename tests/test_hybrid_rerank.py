"""HybridIndex reranking: equal to ``rerank`` over the fused ranking by hand, the validation
gate (a refused reranker serves the fused ranking), the chosen blend, save/load, threads."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dense_oracle import HashingEncoder

from hybrid_engine import mmr, rerank
from hybrid_engine.engine.index import HybridIndex, RerankerRefusedWarning

WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()
CORPUS = [
    {
        "_id": f"d{i}",
        "title": WORDS[i % 15],
        "text": " ".join(WORDS[(i * 7 + j) % 15] for j in range(5)),
    }
    for i in range(40)
]
TEXTS = [f"{doc['title']} {doc['text']}" for doc in CORPUS]
QUERIES = ["cat on the mat", "river stone", "snow and wind fire", "moon"]


def verdict(accepted: bool, mode: str = "rerank", weight: float | None = None) -> dict[str, Any]:
    """A validation record as ``hybrid-engine train-reranker`` writes it."""
    return {
        "accepted": accepted,
        "mode": mode if accepted else "fused",
        "blend_weight": weight,
        "fused": 0.60,
        "best": 0.65 if accepted else 0.60,
    }


class OverlapReranker:
    """A cross-encoder stand-in: the number of query words in the passage, minus a length
    penalty, so its order differs from the fused one."""

    def __init__(self, training: dict[str, Any] | None, name: str = "overlap") -> None:
        self.name = name
        self.training = training
        self.calls = 0

    def score(self, queries: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        self.calls += 1
        return np.array(
            [
                len(set(q.split()) & set(p.split())) - 0.01 * len(p)
                for q, p in zip(queries, passages, strict=True)
            ],
            np.float32,
        )


@pytest.fixture(scope="module")
def engine() -> HybridIndex:
    return HybridIndex.build(CORPUS, encoder=HashingEncoder())


def test_texts_are_kept_by_position(engine: HybridIndex) -> None:
    assert list(engine.texts) == TEXTS


def test_rerank_equals_reranking_the_fused_ranking(engine: HybridIndex) -> None:
    reranker = OverlapReranker({"validation": verdict(True)})
    served = engine.with_reranker(reranker).search(QUERIES, 10, rerank=20)
    fused = engine.search(QUERIES, 20)
    expected = rerank(fused, QUERIES, TEXTS, reranker, depth=20)
    np.testing.assert_array_equal(served.ids, expected.ids[:, :10])
    np.testing.assert_array_equal(served.scores, expected.scores[:, :10])
    assert set(served.timings) == {"bm25", "dense", "fusion", "rerank", "total"}
    assert engine.reranker is None  # with_reranker leaves the original alone


def test_the_blend_validation_chose_is_the_default(engine: HybridIndex) -> None:
    reranker = OverlapReranker({"validation": verdict(True, "blend", 0.3)})
    reranking = engine.with_reranker(reranker)
    assert reranking.reranker_verdict is not None and reranking.reranker_verdict.blend == 0.3
    fused = engine.search(QUERIES, 15)
    for given, used in ((None, 0.3), (0.8, 0.8)):
        served = reranking.search(QUERIES, 10, rerank=15, blend=given)
        expected = rerank(fused, QUERIES, TEXTS, reranker, depth=15, blend=used)
        np.testing.assert_array_equal(served.ids, expected.ids[:, :10])


def test_a_refused_reranker_serves_the_fused_ranking(engine: HybridIndex) -> None:
    reranker = OverlapReranker({"validation": verdict(False)}, name="weak")
    with pytest.warns(RerankerRefusedWarning, match="weak did not beat the fused ranking"):
        refused = engine.with_reranker(reranker)
    assert refused.reranker_verdict is not None and not refused.reranker_verdict.use
    served = refused.search(QUERIES, 10, rerank=30)
    plain = engine.search(QUERIES, 10)
    np.testing.assert_array_equal(served.ids, plain.ids)
    np.testing.assert_array_equal(served.scores, plain.scores)
    assert "rerank" not in served.timings and reranker.calls == 0


def test_a_model_without_a_record_is_used_as_given(engine: HybridIndex) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reranking = engine.with_reranker(OverlapReranker(None))
    assert reranking.reranker_verdict is not None and reranking.reranker_verdict.use
    assert "rerank" in reranking.search(QUERIES, 5, rerank=10).timings


def test_rerank_needs_a_reranker_and_a_readable_record(engine: HybridIndex) -> None:
    with pytest.raises(ValueError, match="rerank needs a cross-encoder"):
        engine.search(QUERIES, 5, rerank=10)
    with pytest.raises(ValueError, match="unreadable validation record"):
        engine.with_reranker(OverlapReranker({"validation": {"ndcg@10": 0.5}}))


def test_rerank_then_mmr(engine: HybridIndex) -> None:
    reranker = OverlapReranker({"validation": verdict(True)})
    served = engine.with_reranker(reranker).search(
        QUERIES, 5, rerank=20, mmr=0.5, mmr_candidates=12
    )
    reranked = rerank(engine.search(QUERIES, 20), QUERIES, TEXTS, reranker, depth=20)
    head = type(reranked)(reranked.ids[:, :12], reranked.scores[:, :12])
    expected = mmr(head, HashingEncoder().encode(QUERIES), engine.dense.vectors, 5, lambda_=0.5)
    np.testing.assert_array_equal(served.ids, expected.ids)
    assert {"rerank", "mmr"} <= set(served.timings)


def test_save_load_keeps_the_texts(engine: HybridIndex, tmp_path: Path) -> None:
    engine.save(tmp_path / "hybrid")
    reranker = OverlapReranker({"validation": verdict(True)})
    loaded = HybridIndex.load(tmp_path / "hybrid", encoder=HashingEncoder(), reranker=reranker)
    assert list(loaded.texts) == TEXTS
    before = engine.with_reranker(reranker).search(QUERIES, 10, rerank=20)
    after = loaded.search(QUERIES, 10, rerank=20)
    np.testing.assert_array_equal(before.ids, after.ids)


def test_concurrent_reranked_searches_equal_sequential(engine: HybridIndex) -> None:
    reranking = engine.with_reranker(OverlapReranker({"validation": verdict(True)}))
    queries = QUERIES * 8
    sequential = [reranking.search(q, 10, rerank=20) for q in queries]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda q: reranking.search(q, 10, rerank=20), queries))
    for one, other in zip(sequential, parallel, strict=True):
        np.testing.assert_array_equal(one.ids, other.ids)
        np.testing.assert_array_equal(one.scores, other.scores)


def test_with_the_onnx_cross_encoder(engine: HybridIndex, cross_encoder_path: Path) -> None:
    from hybrid_engine.models.cross_encoder import CrossEncoder

    model = CrossEncoder.load(cross_encoder_path, variant="int8", max_length=96)
    served = engine.with_reranker(model).search(QUERIES, 10, rerank=30)
    fused = engine.search(QUERIES, 30)
    direct = model.score(
        [q for q in QUERIES for _ in range(30)], [TEXTS[i] for i in fused.ids.ravel()]
    )
    expected_first = fused.ids[np.arange(len(QUERIES)), direct.reshape(len(QUERIES), 30).argmax(1)]
    np.testing.assert_array_equal(served.ids[:, 0], expected_first)
