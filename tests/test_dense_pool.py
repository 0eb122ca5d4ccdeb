"""One rescoring pool over several dense indexes (``dense.candidates``): approximate scores that
compare across indexes whose codes were fitted apart, a pool that keeps the best candidates
of each query over all of them, and an engine of many graph segments that reads one pool of
vectors per query from disk, not one per segment."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from dense_oracle import RandomVectorEncoder

from hybrid_engine import DenseIndex, HybridIndex
from hybrid_engine.dense.candidates import Candidates, pooled, search_pooled
from hybrid_engine.dense.params import DEFAULT_OVERSAMPLE
from hybrid_engine.dense.vector_file import VectorFile

DIM = RandomVectorEncoder.dim
K = 10


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def _shifted(n: int, shift: float, seed: int) -> np.ndarray:
    """Unit vectors around a mean pushed by ``shift`` along the first half of the dimensions:
    two such sets fitted apart get different int8 ranges and binary means."""
    rows = np.random.default_rng(seed).normal(size=(n, DIM))
    rows[:, : DIM // 2] += shift
    return _unit(rows)


QUERIES = _unit(np.random.default_rng(3).normal(size=(40, DIM)))


@pytest.mark.parametrize("shift", [-0.8, 0.8])
def test_int8_approximate_scores_are_the_dequantized_inner_products(shift: float) -> None:
    vectors = _shifted(600, shift, seed=int(shift * 10) + 20)
    index = DenseIndex.from_vectors(vectors, exact_threshold=0, quantization="int8")
    found = index.candidates(QUERIES, K)
    assert found is not None
    exact = QUERIES.astype(np.float64) @ vectors.astype(np.float64).T
    # The fit maps each dimension's range onto 256 codes (quantization's docstring), so a
    # coordinate is off by at most half a step, and a score by sum_i |q_i| step_i / 2.
    step = (vectors.max(axis=0) - vectors.min(axis=0)).astype(np.float64) / 255
    bound = np.abs(QUERIES.astype(np.float64)) @ step / 2 + 1e-5
    taken = np.take_along_axis(exact, found.ids, axis=1)
    assert (np.abs(found.scores - taken) <= bound[:, None]).all()


def test_binary_approximate_scores_compare_across_indexes_coded_apart() -> None:
    # The estimates are biased upwards among the best candidates (those overestimated are the
    # ones picked), alike in every index; what the query's constant <q, m> removes is the
    # offset that differs between indexes of different means m.
    row_errors, means = [], []
    for shift, seed in ((-0.8, 1), (0.8, 2)):
        vectors = _shifted(600, shift, seed)
        index = DenseIndex.from_vectors(vectors, exact_threshold=0, quantization="binary")
        found = index.candidates(QUERIES, K)
        assert found is not None
        exact = QUERIES.astype(np.float64) @ vectors.astype(np.float64).T
        errors = found.scores - np.take_along_axis(exact, found.ids, axis=1)
        row_errors.append(errors.mean(axis=1))
        means.append(vectors.mean(axis=0, dtype=np.float64))
    apart = QUERIES.astype(np.float64) @ (means[0] - means[1])  # the offset without it
    assert np.sqrt(np.mean(apart**2)) > 0.1
    assert np.sqrt(np.mean((row_errors[0] - row_errors[1]) ** 2)) < 0.03


def test_the_pool_keeps_the_best_of_each_row_over_every_part() -> None:
    rng = np.random.default_rng(5)
    parts = []
    for width in (7, 4, 9):
        scores = rng.normal(size=(6, width))
        scores[rng.random(size=scores.shape) < 0.2] = -np.inf  # padding
        ids = np.where(np.isfinite(scores), rng.integers(0, 1000, size=scores.shape), -1)
        parts.append(Candidates(ids, scores, np.zeros(6, dtype=bool)))
    size = 8
    kept = pooled(parts, size)
    everything = np.concatenate([p.scores for p in parts], axis=1)
    for row in range(6):
        finite = np.sort(everything[row][np.isfinite(everything[row])])[::-1]
        threshold = finite[min(size, len(finite)) - 1]
        got = np.concatenate([p.scores[row] for p in kept])
        got = got[np.isfinite(got)]
        assert len(got) == min(size, len(finite))
        assert (got >= threshold).all()
    for before, after in zip(parts, kept, strict=True):
        left = after.ids >= 0
        np.testing.assert_array_equal(after.ids[left], before.ids[left])
        np.testing.assert_array_equal(after.scores[left], before.scores[left])
        assert (after.scores[~left] == -np.inf).all()
    assert pooled(parts, 20) == parts  # a pool that holds every candidate keeps them all


def test_pooled_search_is_each_legs_search_when_there_is_one_graph() -> None:
    vectors = _shifted(600, 0.3, seed=9)
    graph = DenseIndex.from_vectors(vectors, exact_threshold=0)
    small = DenseIndex.from_vectors(vectors[:50])  # exact: no graph
    mask = np.random.default_rng(1).random(600) < 0.7
    results = search_pooled([(graph, mask), (small, None)], QUERIES, K, 1)
    for (index, allowed), got in zip([(graph, mask), (small, None)], results, strict=True):
        want = index.search(QUERIES, K, num_threads=1, allowed=allowed)
        np.testing.assert_array_equal(got.ids, want.ids)
        np.testing.assert_array_equal(got.scores, want.scores)


def _docs(lo: int, hi: int) -> list[dict[str, str]]:
    return [{"_id": f"d{i}", "text": f"document {i}"} for i in range(lo, hi)]


def _saved_engine(path: Path, encoder: RandomVectorEncoder, quantization: str) -> None:
    """An engine of three graph segments (400 documents each) saved at ``path``."""
    engine = HybridIndex.build(
        _docs(0, 400),
        retrievers=("bm25", "dense"),
        encoder=encoder,
        dense_options={"exact_threshold": 100, "quantization": quantization},
    )
    for lo in (400, 800):
        engine.add(_docs(lo, lo + 400))
        engine.commit()
    engine.save(path)
    engine.close()


@pytest.mark.parametrize("quantization", ["int8", "binary"])
def test_an_engine_of_graph_segments_reads_one_pool_of_vectors_per_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quantization: str
) -> None:
    encoder = RandomVectorEncoder()
    _saved_engine(tmp_path / "engine", encoder, quantization)
    read: list[int] = []
    take = VectorFile.take

    def counted(self: VectorFile, rows: np.ndarray) -> np.ndarray:
        read.append(len(rows))
        return take(self, rows)

    monkeypatch.setattr(VectorFile, "take", counted)
    with HybridIndex.load(tmp_path / "engine", encoder=encoder, mmap="cold") as cold:
        snapshot = cold._state.snapshot
        assert len(snapshot.segments) == 3
        assert all(s.dense is not None and s.dense.uses_graph for s in snapshot.segments)
        oversample = DEFAULT_OVERSAMPLE[quantization]
        vectors = encoder.encode([d["text"] for d in _docs(0, 1200)]).astype(np.float64)
        recalls = []
        for query in QUERIES:
            read.clear()
            found = snapshot.search_dense(query[None, :], K, 1, snapshot.allowed(None))
            # One pool of oversample * k rows over the three segments (each segment's own
            # rescoring would read that many per segment).
            assert sum(read) <= oversample * K
            exact = vectors @ query.astype(np.float64)
            ids = found.ids[0]
            np.testing.assert_allclose(found.scores[0], exact[ids], rtol=0, atol=1e-6)
            truth = np.argsort(-exact, kind="stable")[:K]
            recalls.append(len(set(ids.tolist()) & set(truth.tolist())) / K)
        assert np.mean(recalls) >= 0.95


def test_every_segments_rows_are_asked_for_before_any_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoder = RandomVectorEncoder()
    _saved_engine(tmp_path / "engine", encoder, "int8")
    events: list[tuple[str, int, tuple[int, ...]]] = []
    advise, take = VectorFile.advise, VectorFile.take

    def advised(self: VectorFile, rows: np.ndarray) -> None:
        events.append(("advise", id(self), tuple(rows.tolist())))
        advise(self, rows)

    def taken(self: VectorFile, rows: np.ndarray) -> np.ndarray:
        events.append(("take", id(self), tuple(rows.tolist())))
        return take(self, rows)

    monkeypatch.setattr(VectorFile, "advise", advised)
    monkeypatch.setattr(VectorFile, "take", taken)
    with HybridIndex.load(tmp_path / "engine", encoder=encoder, mmap="cold") as cold:
        snapshot = cold._state.snapshot
        for query in QUERIES[:10]:
            events.clear()
            found = snapshot.search_dense(query[None, :], K, 1, snapshot.allowed(None))
            takes = [(file, rows) for kind, file, rows in events if kind == "take"]
            first_take = next(i for i, event in enumerate(events) if event[0] == "take")
            # Each file's rows were asked for, exactly those it then read, before any read.
            asked = {(file, rows) for kind, file, rows in events[:first_take] if kind == "advise"}
            assert set(takes) <= asked and len(takes) >= 1
            advised_rows = [(file, rows) for kind, file, rows in events if kind == "advise"]
            assert len(advised_rows) == len(asked)  # asked for once, not again when read
            assert K <= sum(len(rows) for _, rows in takes) <= 3 * K  # one pool
            assert (found.ids[0] >= 0).all()
