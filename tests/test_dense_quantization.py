"""Quantized dense indexes (``quantization="int8"`` / ``"binary"``): the codes follow their
definitions (written out here in numpy), the graph walk ranks by the estimate those
definitions give, every returned score is the exact float32 one, recall against exact search
holds at the default oversampling, options are checked and saved, and a live engine built with
them commits, reloads and merges."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from dense_oracle import HashingEncoder, clustered, knn_float64, recall
from index_dirs import copy_index, rewrite
from live_oracle import QUERIES as LIVE_QUERIES
from live_oracle import document

from hybrid_engine import DenseIndex, HybridIndex, IndexFormatError
from hybrid_engine.dense.params import DEFAULT_EF_SEARCH, DEFAULT_OVERSAMPLE
from hybrid_engine.dense.quantization import Codes

DIM = 48
VECTORS = clustered(2000, DIM, seed=21)
QUERIES = clustered(100, DIM, seed=22)


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def int8_reference(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes, low and step by the definition of ``quantization`` (float64 arithmetic)."""
    x = vectors.astype(np.float64)
    low, high = x.min(axis=0), x.max(axis=0)
    step = np.where(high > low, (high - low) / 255, 1.0)
    codes = np.clip(np.rint((x - low) / step) - 128, -128, 127)
    return codes, low, step


def binary_reference(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Signs (+-1) of ``x - mean`` and the factors ``|o|^2 / sum |o_i|``."""
    x = vectors.astype(np.float64)
    centred = x - x.mean(axis=0)
    signs = np.where(centred > 0, 1.0, -1.0)
    return signs, (centred**2).sum(axis=1) / np.abs(centred).sum(axis=1)


def four_bit(queries: np.ndarray) -> np.ndarray:
    """Each query rounded to 16 levels between its smallest and largest coordinate."""
    q = queries.astype(np.float64)
    low, high = q.min(axis=1, keepdims=True), q.max(axis=1, keepdims=True)
    width = (high - low) / 15
    return low + width * np.rint((q - low) / width)


def test_int8_codes_follow_the_definition() -> None:
    vectors = unit(VECTORS)
    codes = Codes.fit("int8", vectors)
    expected, low, step = int8_reference(vectors)
    # float32 against float64 arithmetic: a value on a rounding boundary may go either way.
    assert np.abs(codes.data.astype(np.int64) - expected).max() <= 1
    assert np.mean(codes.data == expected) > 0.999
    np.testing.assert_allclose(codes.first, low, rtol=1e-6)
    np.testing.assert_allclose(codes.second, step, rtol=1e-5)
    decoded = low + (codes.data.astype(np.float64) + 128) * step
    assert np.abs(decoded - vectors).max() <= step.max() * 0.5001 + 1e-6


def test_int8_codes_of_added_vectors_are_clipped_to_the_fitted_range() -> None:
    vectors = unit(VECTORS)
    codes = Codes.fit("int8", vectors[:1000])
    outside = vectors[1000:1010] * 3  # beyond the fitted range in most dimensions
    grown = codes.extended(outside, np.concatenate([vectors[:1000], outside]))
    _, low, step = int8_reference(vectors[:1000])
    expected = np.clip(np.rint((outside - low) / step) - 128, -128, 127)
    assert np.abs(grown.data[1000:].astype(np.int64) - expected).max() <= 1
    np.testing.assert_array_equal(grown.data[:1000], codes.data)


def test_binary_codes_follow_the_definition() -> None:
    vectors = unit(VECTORS)
    codes = Codes.fit("binary", vectors)
    signs, factors = binary_reference(vectors)
    assert codes.data.dtype == np.uint64 and codes.data.shape == (len(vectors), 1)
    bits = np.unpackbits(codes.data.view(np.uint8), axis=1, bitorder="little")[:, :DIM]
    assert np.mean(bits == (signs > 0)) > 0.999  # mean computed in float32 vs float64
    np.testing.assert_allclose(codes.second, factors, rtol=1e-4)


@pytest.mark.parametrize("kind", ["int8", "binary"])
def test_the_walk_ranks_by_the_estimate_of_the_definition(kind: str) -> None:
    """With a list as long as the index, the walk expands every node: its k best are the k
    best by the estimate written out from the definition."""
    vectors, queries = unit(VECTORS[:500]), unit(QUERIES[:20])
    index = DenseIndex.from_vectors(vectors, quantization=kind, exact_threshold=0, m=8)
    graph = index._store.graph
    graph.set_ef(500)
    ids, distances = graph.knn_query(queries, k=10)
    if kind == "int8":
        codes, _, step = int8_reference(vectors)
        estimate = (queries.astype(np.float64) * step) @ codes.T
    else:
        signs, factors = binary_reference(vectors)
        estimate = factors * (four_bit(queries) @ signs.T)
    best = -np.sort(-estimate, axis=1)[:, :10]
    # The constant of each query the kernel leaves out: the same for every node of the row.
    got = -distances.astype(np.float64)
    offset = np.take_along_axis(estimate, ids, axis=1) - got
    assert np.ptp(offset, axis=1).max() <= 1e-3 * np.abs(best).max()
    np.testing.assert_allclose(np.take_along_axis(estimate, ids, axis=1), best, atol=1e-3)


@pytest.mark.parametrize("kind", ["int8", "binary"])
@pytest.mark.parametrize("metric", ["cosine", "ip"])
def test_scores_are_exact_and_recall_holds(kind: str, metric: str) -> None:
    index = DenseIndex.from_vectors(VECTORS, metric=metric, quantization=kind, exact_threshold=0)
    assert index.quantization == kind and index.oversample == DEFAULT_OVERSAMPLE[kind]
    assert index.ef_search == DEFAULT_EF_SEARCH[kind]
    found = index.search(QUERIES, 10)
    exact = index.search(QUERIES, len(VECTORS), exact=True)
    for row in range(len(QUERIES)):
        scores = dict(zip(exact.ids[row], exact.scores[row], strict=True))
        assert [scores[i] for i in found.ids[row]] == list(found.scores[row])
    truth = knn_float64(VECTORS, QUERIES, 10, metric)
    assert recall(found.ids, truth) >= (0.98 if kind == "int8" else 0.9)


def test_more_oversampling_finds_more() -> None:
    index = DenseIndex.from_vectors(VECTORS, quantization="binary", exact_threshold=0)
    truth = knn_float64(VECTORS, QUERIES, 10, "cosine")
    figures = []
    for oversample in (1, 4, 32):
        index.oversample = oversample
        figures.append(recall(index.search(QUERIES, 10).ids, truth))
    assert figures[0] < figures[1] <= figures[2] and figures[2] >= 0.97


@pytest.mark.parametrize("kind", ["int8", "binary"])
def test_saved_and_loaded_alike(kind: str, tmp_path: Path) -> None:
    index = DenseIndex.from_vectors(VECTORS, quantization=kind, oversample=5, exact_threshold=0)
    index.save(tmp_path / "q")
    manifest = json.loads((tmp_path / "q" / "manifest.json").read_text())
    assert (manifest["params"]["quantization"], manifest["params"]["oversample"]) == (kind, 5.0)
    assert {"codes.npy", "code_first.npy", "code_second.npy"} <= set(manifest["files"])
    for mmap in (False, True):
        loaded = DenseIndex.load(tmp_path / "q", mmap=mmap)
        assert (loaded.quantization, loaded.oversample) == (kind, 5.0)
        a, b = index.search(QUERIES, 10), loaded.search(QUERIES, 10)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)


@pytest.mark.parametrize(
    "name, array, message",
    [
        ("codes", np.zeros((2000, DIM), np.uint8), "codes is uint8"),
        ("code_first", np.zeros(DIM - 1, np.float32), "code_first is float32 of shape"),
        ("code_second", np.zeros(DIM, np.float64), "code_second is float64"),
    ],
)
def test_codes_of_the_wrong_shape_are_refused(tmp_path, name, array, message) -> None:
    DenseIndex.from_vectors(VECTORS, quantization="int8", exact_threshold=0).save(tmp_path / "q")
    copy = copy_index(tmp_path / "q", tmp_path / "copy")
    rewrite(copy, name, array)
    with pytest.raises(IndexFormatError, match=f"{message}.*rebuild"):
        DenseIndex.load(copy)


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"quantization": "int4"}, ValueError, r"unknown quantization 'int4'.*'int8', 'binary'"),
        ({"oversample": 0.5}, ValueError, "oversample must be a finite number >= 1, got 0.5"),
        ({"oversample": float("nan")}, ValueError, "oversample must be a finite number >= 1"),
        ({"oversample": "2"}, TypeError, "oversample must be a number, got str"),
        ({"oversample": True}, TypeError, "oversample must be a number, got bool"),
    ],
)
def test_bad_options_are_refused(options, error, message) -> None:
    with pytest.raises(error, match=message):
        DenseIndex.from_vectors(VECTORS[:10], **options)
    with pytest.raises(error, match=message):
        HybridIndex.build(
            [document(i) for i in range(3)], encoder=HashingEncoder(), dense_options=options
        )
    index = DenseIndex.from_vectors(VECTORS[:10])
    if "oversample" in options:
        with pytest.raises(error, match=message):
            index.oversample = options["oversample"]
        assert index.oversample == 1.0


def test_an_engine_walks_binary_codes_by_default_and_keeps_a_chosen_quantization(
    tmp_path: Path,
) -> None:
    """A new engine's dense leg: binary codes with their own list and oversampling unless
    ``dense_options`` chooses; each choice reaches the segments a later commit writes."""
    docs = [document(i) for i in range(6)]
    for options, kind, ef_search in (
        ({}, "binary", 448),
        ({"quantization": "int8"}, "int8", 256),
        ({"quantization": None}, None, 256),
        ({"quantization": "binary", "ef_search": 100}, "binary", 100),
    ):
        path = tmp_path / f"{kind}-{ef_search}"
        engine = HybridIndex.build(docs, encoder=HashingEncoder(), dense_options=options)
        engine.save(path)
        engine.add([document(i) for i in range(6, 9)])
        engine.commit()
        engine.close()
        with HybridIndex.load(path, encoder=HashingEncoder()) as again:
            legs = [segment.dense for segment in again._state.snapshot.segments]
        assert len(legs) == 2
        for leg in legs:
            assert leg is not None and leg.quantization == kind and leg.ef_search == ef_search
            assert leg.oversample == {None: 1.0, "int8": 3.0, "binary": 45.0}[kind]


@pytest.mark.parametrize("kind", ["int8", "binary"])
def test_a_live_engine_commits_reloads_and_merges_quantized(kind: str, tmp_path: Path) -> None:
    options = {"quantization": kind, "exact_threshold": 0, "oversample": 100}
    docs = [document(i) for i in range(60)]
    engine = HybridIndex.build(
        docs, retrievers=("dense",), encoder=HashingEncoder(), dense_options=options
    )
    reference = HybridIndex.build(
        docs, retrievers=("dense",), encoder=HashingEncoder(), dense_options={"exact_threshold": 0}
    )
    # Oversampled past the index's size, the rescoring sees every document: exact results.
    for a, b in ((engine, reference),):
        ra, rb = a.search(LIVE_QUERIES, 5), b.search(LIVE_QUERIES, 5)
        assert ra.doc_ids == rb.doc_ids
    engine.save(tmp_path / "live")
    engine.add([document(i) for i in range(60, 80)])
    engine.commit()
    engine.merge()
    again = HybridIndex.load(tmp_path / "live", encoder=HashingEncoder(), mmap=True)
    segment = again._state.snapshot.segments[0]
    assert segment.dense.quantization == kind and again.num_segments == 1
    whole = HybridIndex.build(
        [document(i) for i in range(80)],
        retrievers=("dense",),
        encoder=HashingEncoder(),
        dense_options={"exact_threshold": 0},
    )
    assert again.search(LIVE_QUERIES, 5).doc_ids == whole.search(LIVE_QUERIES, 5).doc_ids


@pytest.mark.parametrize("kind", [None, "int8"])
def test_cold_mapping_keeps_only_quantized_vectors_on_disk(kind, tmp_path: Path) -> None:
    """``mmap="cold"``: the float32 vectors of a quantized graph stay mapped, everything else
    (links, codes; every array of a float32 graph, which walks on its vectors) is read."""
    index = DenseIndex.from_vectors(VECTORS, quantization=kind, exact_threshold=0)
    index.save(tmp_path / "q")
    cold = DenseIndex.load(tmp_path / "q", mmap="cold")
    graph = cold._store.graph
    assert isinstance(cold._store._buffer, np.memmap) == (kind is not None)
    assert not any(isinstance(a, np.memmap) for a in graph.arrays.values())
    assert not isinstance(graph.codes.data, np.memmap) or kind is None
    a, b = index.search(QUERIES, 10), cold.search(QUERIES, 10)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.scores, b.scores)
    with pytest.raises(ValueError, match=r"mmap must be False .* or 'cold'.*got 'warm'"):
        DenseIndex.load(tmp_path / "q", mmap="warm")


def test_cold_rescoring_reads_rows_by_position_and_survives_the_file_replaced(
    tmp_path: Path,
) -> None:
    """``mmap="cold"`` rescores from the vectors' file by position (``VectorFile``): the same
    results as in memory, also once a save has replaced the directory (the file stays open)."""
    index = DenseIndex.from_vectors(VECTORS, quantization="int8", exact_threshold=0)
    index.save(tmp_path / "q")
    cold = DenseIndex.load(tmp_path / "q", mmap="cold")
    assert cold._store._file is not None
    DenseIndex.from_vectors(VECTORS[::-1] * 2, metric="ip").save(tmp_path / "q")
    a, b = index.search(QUERIES, 10), cold.search(QUERIES, 10)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.scores, b.scores)
    allowed = np.random.default_rng(3).random(len(VECTORS)) < 0.3
    a, b = index.search(QUERIES, 10, allowed=allowed), cold.search(QUERIES, 10, allowed=allowed)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.scores, b.scores)


def test_a_cold_loaded_engine_maps_only_texts_and_quantized_vectors(tmp_path: Path) -> None:
    """``HybridIndex.load(mmap="cold")``: the texts and titles and the quantized leg's float32
    vectors stay on disk; postings, links, codes, ids and metadata are read; searches and hits
    are those of the engine in memory."""
    docs = [document(i) for i in range(60)]
    options = {"quantization": "int8", "exact_threshold": 0}
    engine = HybridIndex.build(docs, encoder=HashingEncoder(), dense_options=options)
    engine.save(tmp_path / "live")
    cold = HybridIndex.load(tmp_path / "live", encoder=HashingEncoder(), mmap="cold")
    segment = cold._state.snapshot.segments[0]
    assert isinstance(segment.docs.texts._frames, np.memmap)
    assert not isinstance(segment.docs.ids._data, np.memmap)
    assert segment.dense._store._file is not None
    graph = segment.dense._store.graph
    assert not any(isinstance(a, np.memmap) for a in graph.arrays.values())
    a, b = engine.search(LIVE_QUERIES, 5), cold.search(LIVE_QUERIES, 5)
    assert a.doc_ids == b.doc_ids
    assert [[h.text for h in row] for row in a.hits()] == [
        [h.text for h in row] for row in b.hits()
    ]
