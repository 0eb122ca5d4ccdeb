"""The graph kept as its links only (``links.LinkGraph``), searched over the float32 vectors or
their int8/binary codes: on the same graph, the same candidates as hnswlib's own search;
recall against brute force; every search path (filtered, exact, k > n, both metrics) in
memory and memory-mapped; ``add`` grows it through hnswlib; hostile link arrays load without
being read (mmap) and then make a search raise IndexFormatError naming the index, never crash
or loop, and are refused by a checked load and by ``add``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from dense_oracle import assert_rows_well_formed, clustered, knn, knn_float64, recall
from index_dirs import copy_index, rewrite

from hybrid_engine import DenseIndex, IndexFormatError
from hybrid_engine.dense import _prefetch
from hybrid_engine.dense.links import LinkGraph

N, DIM = 3000, 24
VECTORS = clustered(N, DIM, seed=11)
QUERIES = clustered(200, DIM, seed=12)
RECALL = {None: 0.9, "int8": 0.9, "binary": 0.8}
"""Recall@10 at ef 24 (m=8) each kind reaches on these vectors, with its default oversample."""


@pytest.fixture(
    scope="module",
    params=[("cosine", None), ("ip", None), ("cosine", "int8"), ("ip", "binary")],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def saved(request, tmp_path_factory) -> tuple[str, str | None, Path]:
    """A graph index (one insert thread: a fixed graph), saved."""
    metric, quantization = request.param
    path = tmp_path_factory.mktemp("links") / f"{metric}-{quantization}"
    DenseIndex.from_vectors(
        VECTORS, metric=metric, m=8, ef_search=24, exact_threshold=100, num_threads=1,
        quantization=quantization,
    ).save(path)  # fmt: skip
    return metric, quantization, path


@pytest.fixture
def copy(saved, tmp_path) -> Path:
    return copy_index(saved[2], tmp_path / "copy")


def mapped(path: Path) -> DenseIndex:
    index = DenseIndex.load(path, mmap=True)
    assert isinstance(index._store.graph, LinkGraph)
    assert isinstance(index._store.graph.arrays["links0"], np.memmap)
    return index


def test_same_candidates_as_hnswlib_on_the_same_graph() -> None:
    """hnswlib's own search of the graph the links come from, and the links' search of the
    float32 vectors: the same walk, so the same hits but for float32 near-ties."""
    index = DenseIndex.from_vectors(VECTORS, m=8, ef_search=24, exact_threshold=100)
    graph = index._store.graph
    hnsw = graph.to_hnswlib(index.vectors, 8, 200)
    hnsw.set_ef(24)
    theirs, _ = hnsw.knn_query(QUERIES, k=10)
    ours, _ = graph.knn_query(QUERIES, k=10)
    assert np.mean(theirs.astype(np.int64) == ours) >= 0.99


@pytest.mark.parametrize(
    ("dtype", "length"),
    [(np.int8, 384), (np.int8, 100), (np.float32, 384), (np.uint64, 6), (np.uint64, 1)],
)
@pytest.mark.parametrize("shift", [0, 8, 40, 63])
def test_the_walk_asks_for_every_cache_line_of_a_code(monkeypatch, dtype, length, shift) -> None:
    """``prefetch_row`` starts a load in each 64-byte line a code spans, wherever it starts
    (int8 and float32 vectors, binary words): the walk must not wait on the lines the CPU's
    own prefetcher leaves out."""
    asked: list[int] = []
    monkeypatch.setattr(
        _prefetch, "prefetch", lambda row, i: asked.append(row.ctypes.data + i * row.itemsize)
    )
    size = np.dtype(dtype).itemsize
    buffer = np.zeros(length * size + 128, dtype=np.uint8)
    start = (-buffer.ctypes.data) % 64 + shift - shift % size  # aligned to the item, not a line
    row = buffer[start : start + length * size].view(dtype)
    _prefetch.prefetch_row.py_func(row)
    first, last = row.ctypes.data, row.ctypes.data + row.nbytes - 1
    assert all(first <= a <= last for a in asked)
    assert {a // 64 for a in asked} == set(range(first // 64, last // 64 + 1))


def test_recall_and_exact_scores(saved) -> None:
    metric, quantization, path = saved
    truth = knn_float64(VECTORS, QUERIES, 10, metric)
    in_memory, on_disk = DenseIndex.load(path), mapped(path)
    a, b = in_memory.search(QUERIES, 10), on_disk.search(QUERIES, 10)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert recall(b.ids, truth) >= RECALL[quantization]
    # Every score is the exact score of its id.
    exact = on_disk.search(QUERIES, N, exact=True)
    for row in range(0, len(QUERIES), 40):
        scores = dict(zip(exact.ids[row], exact.scores[row], strict=True))
        assert [scores[i] for i in b.ids[row]] == list(b.scores[row])
    assert_rows_well_formed(b, N)


def test_threads_split_the_batch_alike(saved) -> None:
    index = mapped(saved[2])
    one, two = index.search(QUERIES, 7, num_threads=1), index.search(QUERIES, 7, num_threads=2)
    np.testing.assert_array_equal(one.ids, two.ids)
    np.testing.assert_array_equal(one.scores, two.scores)


def test_exact_and_k_past_n_equal_the_oracle(saved) -> None:
    metric, _, path = saved
    index = mapped(path)
    ids, scores = knn(VECTORS, QUERIES[:3], 5, metric)
    found = index.search(QUERIES[:3], 5, exact=True)
    np.testing.assert_array_equal(found.ids, ids)
    np.testing.assert_array_equal(found.scores, scores)
    everything = index.search(QUERIES[:2], N + 5)
    ids, scores = knn(VECTORS, QUERIES[:2], N + 5, metric)
    np.testing.assert_array_equal(everything.ids, ids)
    np.testing.assert_array_equal(everything.scores, scores)


@pytest.mark.parametrize("share", [0.02, 0.5])
def test_filtered_search_keeps_to_allowed(saved, share: float) -> None:
    metric, quantization, path = saved
    allowed = np.random.default_rng(7).random(N) < share
    found = mapped(path).search(QUERIES, 10, allowed=allowed)
    rows = np.flatnonzero(allowed)
    truth = rows[knn_float64(VECTORS[rows], QUERIES, 10, metric)]
    assert recall(found.ids, truth) >= RECALL[quantization]
    assert allowed[found.ids].all()
    assert_rows_well_formed(found, N)


def test_add_grows_the_graph_through_hnswlib(saved, tmp_path) -> None:
    metric, quantization, path = saved
    index = mapped(path)
    extra = clustered(50, DIM, seed=13)
    index.add(extra)
    graph = index._store.graph
    assert isinstance(graph, LinkGraph) and graph.element_count == N + 50
    assert len(graph.codes.data) == N + 50 and index.quantization == quantization
    both = np.concatenate([VECTORS, extra])
    truth = knn_float64(both, QUERIES, 10, metric)
    assert recall(index.search(QUERIES, 10).ids, truth) >= RECALL[quantization]
    index.save(tmp_path / "grown")
    again = DenseIndex.load(tmp_path / "grown")
    np.testing.assert_array_equal(again.search(QUERIES, 10).ids, index.search(QUERIES, 10).ids)


def test_saved_again_unchanged(saved, tmp_path) -> None:
    mapped(saved[2]).save(tmp_path / "again")
    for file in saved[2].glob("*.npy"):
        assert (tmp_path / "again" / file.name).read_bytes() == file.read_bytes()


# --- hostile link arrays -------------------------------------------------------------------------


def refused(copy: Path, match: str) -> None:
    """The mapped load succeeds (the links are not read); a search raises, naming the index;
    the checked load refuses the links too, and so does ``add``, adding nothing."""
    index = mapped(copy)
    with pytest.raises(IndexFormatError, match=match) as caught:
        index.search(QUERIES, 10)
    assert str(copy) in str(caught.value)
    with pytest.raises(IndexFormatError, match="malformed"):
        DenseIndex.load(copy, mmap=True, verify=True)
    with pytest.raises(IndexFormatError):
        index.add(VECTORS[:2])
    assert index.num_documents == N


def test_level0_links_out_of_range(copy) -> None:
    links0 = np.load(copy / "links0.npy")
    links0[:, 1] = N + np.arange(N)  # every first link points past the last node
    rewrite(copy, "links0", links0)
    refused(copy, r"node \d+ are malformed")


def test_level0_counts_too_large(copy) -> None:
    links0 = np.load(copy / "links0.npy")
    links0[:, 0] = 17  # the most is 2m = 16
    rewrite(copy, "links0", links0)
    refused(copy, r"node \d+ are malformed")


@pytest.mark.parametrize("target", ["past the end", "a node below the level"])
def test_upper_level_link_broken(copy, target: str) -> None:
    """The entry point's top list is the first thing every search reads."""
    manifest = (copy / "manifest.json").read_text()
    entry, top = (int(v) for v in _graph_layout(manifest))
    assert top >= 1
    upper, starts = np.load(copy / "upper.npy"), np.load(copy / "upper_start.npy")
    below = int(np.flatnonzero(np.diff(starts) == 0)[0])
    row = starts[entry] + top - 1
    upper[row, 0], upper[row, 1] = 1, 10**6 if target == "past the end" else below
    rewrite(copy, "upper", upper)
    refused(copy, f"node {entry} are malformed")


def _graph_layout(manifest: str) -> tuple[int, int]:
    graph = json.loads(manifest)["graph"]
    return graph["entry_point"], graph["max_level"]


@pytest.mark.parametrize(
    "change", ["not ascending", "past the upper links", "entry point below the top", "dtype"]
)
def test_upper_starts_broken_are_refused_at_load(copy, change: str) -> None:
    starts = np.load(copy / "upper_start.npy")
    entry, _ = _graph_layout((copy / "manifest.json").read_text())
    if change == "not ascending":
        starts[5] = starts[6] + 1
    elif change == "past the upper links":
        starts[-1] += 1
    elif change == "entry point below the top":
        starts[entry + 1 :] -= 1
        starts[-1] += 1
    else:
        starts = starts.astype(np.int32)
    rewrite(copy, "upper_start", starts)
    for mmap in (True, False):
        with pytest.raises(IndexFormatError, match="do not form a graph") as caught:
            DenseIndex.load(copy, mmap=mmap)
        assert str(copy) in str(caught.value)


def test_links_in_a_cycle_end(copy) -> None:
    """Every node linked to itself and the next only: the walk ends (visited marks), and every
    hit is scored exactly."""
    links0 = np.load(copy / "links0.npy")
    links0[:, 0], links0[:, 1], links0[:, 2] = 2, np.arange(N), (np.arange(N) + 1) % N
    rewrite(copy, "links0", links0)
    index = mapped(copy)
    found = index.search(QUERIES[:3], 10)
    assert_rows_well_formed(found, N)
    exact = index.search(QUERIES[:3], N, exact=True)
    for row in range(3):
        scores = dict(zip(exact.ids[row], exact.scores[row], strict=True))
        assert [scores[i] for i in found.ids[row]] == list(found.scores[row])
