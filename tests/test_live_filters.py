"""Filters inside every leg equal brute force: rank everything, keep the matching documents,
cut to k; k hits whenever at least k match; the engine's fused ranking is the fusion of the
filtered legs."""

from __future__ import annotations

import numpy as np
import pytest
from dense_oracle import HashingEncoder
from sparse_oracle import HashingSparseEncoder

from hybrid_engine import fuse
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.metadata import Filter

WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()
N = 600
QUERIES = ["cat on the mat", "river stone", "snow and wind fire", "moon tree", "dog"]
SELECTIVITIES = (0.001, 0.01, 0.1, 0.5)


def _corpus() -> list[dict]:
    rng = np.random.default_rng(0)
    buckets = rng.permutation(N)
    return [
        {
            "_id": f"d{i}",
            "text": " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), 4 + i % 6)),
            "metadata": {"bucket": int(buckets[i]), "tags": ["odd" if i % 2 else "even"]},
        }
        for i in range(N)
    ]


CORPUS = _corpus()


@pytest.fixture(scope="module")
def engine() -> HybridIndex:
    first = HybridIndex.build(
        CORPUS[:400],
        retrievers=("bm25", "dense", "splade"),
        encoder=HashingEncoder(),
        splade_encoder=HashingSparseEncoder(),
        dense_options={"exact_threshold": 50},  # segments search through their graphs
    )
    first.add(CORPUS[400:])
    first.commit()
    first.delete([f"d{i}" for i in range(0, N, 7)])
    first.commit()
    assert first.num_segments == 2
    return first


def _matching(limit: int) -> np.ndarray:
    """Brute force: bool per position of the engine's documents, bucket < limit and live."""
    return np.array(
        [d["metadata"]["bucket"] < limit and int(d["_id"][1:]) % 7 != 0 for d in CORPUS]
    )


def _brute(full, allowed: np.ndarray, k: int):  # type: ignore[no-untyped-def]
    """Each row of an unfiltered ranking of every document, matching ones only, cut to k."""
    ids = np.full((len(full.ids), k), -1, np.int64)
    scores = np.full((len(full.ids), k), -np.inf, np.float32)
    for row, (row_ids, row_scores) in enumerate(zip(full.ids, full.scores, strict=True)):
        keep = [(i, s) for i, s in zip(row_ids, row_scores, strict=True) if i >= 0 and allowed[i]]
        for j, (i, s) in enumerate(keep[:k]):
            ids[row, j], scores[row, j] = i, s
    return ids, scores


@pytest.mark.parametrize("selectivity", SELECTIVITIES)
def test_each_leg_equals_brute_force(engine: HybridIndex, selectivity: float) -> None:
    limit = max(1, int(N * selectivity))
    where = Filter.compile({"bucket": {"$lt": limit}})
    snapshot = engine._state.snapshot
    masks = snapshot.allowed(where)
    allowed = np.concatenate(masks)
    np.testing.assert_array_equal(allowed, _matching(limit))
    k = 10
    unfiltered = list(snapshot.live)
    bm25 = snapshot.search_bm25(QUERIES, k, 1, masks)
    expected = _brute(snapshot.search_bm25(QUERIES, N, 1, unfiltered), allowed, k)
    np.testing.assert_array_equal(bm25.ids, expected[0])
    np.testing.assert_array_equal(bm25.scores, expected[1])
    vectors = HashingSparseEncoder().encode(QUERIES)
    splade = snapshot.search_splade(vectors, k, 1, masks)
    expected = _brute(snapshot.search_splade(vectors, N, 1, unfiltered), allowed, k)
    np.testing.assert_array_equal(splade.ids, expected[0])
    np.testing.assert_array_equal(splade.scores, expected[1])
    queries = HashingEncoder().encode(QUERIES)
    dense = snapshot.search_dense(queries, k, 1, masks)
    exact = np.concatenate([seg.dense.vectors for seg in snapshot.segments]) @ queries.T
    n_match = int(allowed.sum())
    for row in range(len(QUERIES)):
        truth = np.argsort(-np.where(allowed, exact[:, row], -np.inf), kind="stable")[:k]
        truth = truth[: min(k, n_match)]
        found = dense.ids[row][dense.ids[row] >= 0]
        assert len(found) == min(k, n_match)  # k hits whenever k documents match
        assert allowed[found].all()
        assert len(set(found) & set(truth)) >= 0.9 * len(truth)


def test_the_engine_fuses_the_filtered_legs(engine: HybridIndex) -> None:
    where = {"$or": [{"bucket": {"$lt": 30}}, {"tags": "odd", "bucket": {"$gte": 590}}]}
    result = engine.search(QUERIES, 10, filter=where, depth=50)
    snapshot = engine._state.snapshot
    masks = snapshot.allowed(Filter.compile(where))
    legs = [
        snapshot.search_bm25(QUERIES, 50, None, masks),
        snapshot.search_dense(HashingEncoder().encode(QUERIES), 50, None, masks),
        snapshot.search_splade(HashingSparseEncoder().encode(QUERIES), 50, None, masks),
    ]
    expected = fuse(legs, 10, depth=50)
    np.testing.assert_array_equal(result.ids, expected.ids)
    for hits in result.hits():
        for hit in hits:
            meta = hit.metadata
            assert meta["bucket"] < 30 or (meta["tags"] == ["odd"] and meta["bucket"] >= 590)
    assert all(len(row) == 10 for row in result.doc_ids)


def test_a_bad_filter_names_the_problem(engine: HybridIndex) -> None:
    with pytest.raises(ValueError, match=r"\$regex"):
        engine.search(QUERIES, 3, filter={"bucket": {"$regex": "x"}})
    with pytest.raises(TypeError, match=r"\$in"):
        engine.search(QUERIES, 3, filter={"bucket": {"$in": 3}})


def test_mmr_and_a_filter_that_matches_nothing(engine: HybridIndex) -> None:
    result = engine.search(QUERIES, 5, filter={"bucket": {"$lt": 0}}, mmr=0.5)
    assert (result.ids == -1).all()
    picked = engine.search(QUERIES, 5, filter={"bucket": {"$lt": 100}}, mmr=0.5)
    assert all(h.metadata["bucket"] < 100 for row in picked.hits() for h in row)
