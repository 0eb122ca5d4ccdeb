"""The dense leg of a live engine whose segments have HNSW graphs: after each commit of a seeded
run of adds, upserts, deletes and merges, recall@10 against exact search over the live vectors
is >= 0.99, no deleted document comes back, and the stored vectors are a fresh encoding of the
live documents."""

from __future__ import annotations

import numpy as np
import pytest
from dense_oracle import RandomVectorEncoder

from hybrid_engine.engine.index import HybridIndex

DIM = 32
EXACT_THRESHOLD = 100  # segments above it search an HNSW graph
K = 10


def _doc(i: int, version: int = 0) -> dict[str, str]:
    return {"_id": f"d{i}", "title": "", "text": f"document {i} version {version}"}


def _live(engine: HybridIndex) -> tuple[list[str], np.ndarray]:
    """(ids, global positions) of the live documents, in the engine's order."""
    snapshot = engine._state.snapshot
    ids, positions = [], []
    for s, rows in snapshot.live_positions():
        ids += [snapshot.segments[s].docs.ids[r] for r in rows]
        positions.append(rows + snapshot.bases[s])
    return ids, np.concatenate(positions)


def _check(engine: HybridIndex, expected: dict[str, int], queries: np.ndarray) -> float:
    snapshot = engine._state.snapshot
    ids, positions = _live(engine)
    assert sorted(ids) == sorted(expected)
    vectors = snapshot.vectors(positions)
    fresh = RandomVectorEncoder().encode([_doc(int(i[1:]), expected[i])["text"] for i in ids])
    np.testing.assert_array_equal(vectors, fresh)
    assert any(seg.dense is not None and seg.dense.uses_graph for seg in snapshot.segments)
    found = snapshot.search_dense(queries, K, 1, snapshot.allowed(None))
    exact = queries.astype(np.float64) @ vectors.astype(np.float64).T
    live = set(positions.tolist())
    recalls = []
    for q in range(len(queries)):
        got = found.ids[q]
        assert set(got.tolist()) <= live  # deleted documents never come back
        truth = positions[np.argsort(-exact[q], kind="stable")[:K]]
        recalls.append(len(set(got.tolist()) & set(truth.tolist())) / K)
    return float(np.mean(recalls))


@pytest.mark.slow  # a few thousand vectors, graphs built per segment and on merge
def test_recall_over_hnsw_segments_after_each_commit() -> None:
    rng = np.random.default_rng(11)
    queries = rng.normal(size=(100, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    engine = HybridIndex.build(
        [_doc(i) for i in range(1500)],
        retrievers=("bm25", "dense"),
        encoder=RandomVectorEncoder(),
        dense_options={"exact_threshold": EXACT_THRESHOLD, "m": 16},
    )
    expected = {f"d{i}": 0 for i in range(1500)}
    recalls = [_check(engine, expected, queries)]
    next_id = 1500
    for step in range(4):
        new = list(range(next_id, next_id + 400))
        next_id += 400
        engine.add([_doc(i) for i in new])
        expected.update({f"d{i}": 0 for i in new})
        gone = rng.choice(sorted(expected), size=250, replace=False).tolist()
        engine.delete(gone)
        for name in gone:
            del expected[name]
        changed = rng.choice(sorted(expected), size=80, replace=False).tolist()
        engine.upsert([_doc(int(name[1:]), step + 1) for name in changed])
        expected.update({name: step + 1 for name in changed})
        engine.commit()
        recalls.append(_check(engine, expected, queries))
    engine.merge()
    recalls.append(_check(engine, expected, queries))
    assert engine.num_segments == 1
    assert min(recalls) >= 0.99, recalls
