"""A dense index loaded with ``mmap=True`` (no ``verify``) searches its graph in the memory-mapped
file (``MappedGraph``): the same candidates as hnswlib on the same graph, recall against brute
force as hnswlib's, every search path (filtered, exact, k > n, both metrics); a hostile graph
file loads without being read and then makes a search raise IndexFormatError naming the
index, never crash or loop; ``add`` reads the graph into hnswlib first."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from dense_oracle import assert_rows_well_formed, clustered, knn, knn_float64, recall
from index_dirs import copy_index, fix_checksums

from hybrid_engine import DenseIndex, IndexFormatError
from hybrid_engine.dense.mapped_graph import MappedGraph

N, DIM = 3000, 24
VECTORS = clustered(N, DIM, seed=11)
QUERIES = clustered(200, DIM, seed=12)
HEADER = struct.Struct("<6QiI3QdQ")  # hnswlib 0.8 saveIndex header


@pytest.fixture(scope="module", params=["cosine", "ip"])
def saved(request, tmp_path_factory) -> tuple[str, Path]:
    """A graph index (one insert thread: a fixed graph), saved."""
    path = tmp_path_factory.mktemp("mapped") / request.param
    DenseIndex.from_vectors(
        VECTORS, metric=request.param, m=8, ef_search=24, exact_threshold=100, num_threads=1
    ).save(path)
    return request.param, path


@pytest.fixture
def copy(saved, tmp_path) -> Path:
    return copy_index(saved[1], tmp_path / "copy")


def mapped(path: Path) -> DenseIndex:
    index = DenseIndex.load(path, mmap=True)
    assert isinstance(index._store.graph, MappedGraph)
    return index


def test_same_candidates_and_recall_as_hnswlib(saved) -> None:
    metric, path = saved
    in_memory, on_disk = DenseIndex.load(path), mapped(path)
    assert not isinstance(in_memory._store.graph, MappedGraph)
    truth = knn_float64(VECTORS, QUERIES, 10, metric)
    a, b = in_memory.search(QUERIES, 10), on_disk.search(QUERIES, 10)
    assert abs(recall(a.ids, truth) - recall(b.ids, truth)) <= 0.005
    assert recall(b.ids, truth) >= 0.9
    assert np.mean(a.ids == b.ids) >= 0.99  # the same graph walk, but for float32 near-ties
    # Every score is the exact score of its id, as on the hnswlib path.
    exact = on_disk.search(QUERIES, N, exact=True)
    for row in range(0, len(QUERIES), 40):
        scores = dict(zip(exact.ids[row], exact.scores[row], strict=True))
        assert [scores[i] for i in b.ids[row]] == list(b.scores[row])
    assert_rows_well_formed(b, N)


def test_threads_split_the_batch_alike(saved) -> None:
    index = mapped(saved[1])
    one, two = index.search(QUERIES, 7, num_threads=1), index.search(QUERIES, 7, num_threads=2)
    np.testing.assert_array_equal(one.ids, two.ids)
    np.testing.assert_array_equal(one.scores, two.scores)


def test_exact_and_k_past_n_equal_the_oracle(saved) -> None:
    metric, path = saved
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
    metric, path = saved
    allowed = np.random.default_rng(7).random(N) < share
    in_memory, on_disk = DenseIndex.load(path), mapped(path)
    a = in_memory.search(QUERIES, 10, allowed=allowed)
    b = on_disk.search(QUERIES, 10, allowed=allowed)
    rows = np.flatnonzero(allowed)
    truth = rows[knn_float64(VECTORS[rows], QUERIES, 10, metric)]
    assert abs(recall(a.ids, truth) - recall(b.ids, truth)) <= 0.01
    assert allowed[b.ids].all()
    assert_rows_well_formed(b, N)


def test_add_reads_the_graph_into_hnswlib(saved, tmp_path) -> None:
    metric, path = saved
    index = mapped(path)
    extra = clustered(50, DIM, seed=13)
    index.add(extra)
    assert not isinstance(index._store.graph, MappedGraph)
    assert index._store.graph.element_count == N + 50
    both = np.concatenate([VECTORS, extra])
    truth = knn_float64(both, QUERIES, 10, metric)
    assert recall(index.search(QUERIES, 10).ids, truth) >= 0.9
    index.save(tmp_path / "grown")
    again = DenseIndex.load(tmp_path / "grown")
    np.testing.assert_array_equal(again.search(QUERIES, 10).ids, index.search(QUERIES, 10).ids)


def test_saved_again_unchanged(saved, tmp_path) -> None:
    mapped(saved[1]).save(tmp_path / "again")
    assert (tmp_path / "again" / "graph.hnsw").read_bytes() == (
        saved[1] / "graph.hnsw"
    ).read_bytes()


# --- hostile graph files ---------------------------------------------------------------------


def layout(copy: Path) -> tuple[bytearray, int, int]:
    """The graph file's bytes, the size of a level-0 record and the offset of the upper part."""
    data = bytearray((copy / "graph.hnsw").read_bytes())
    header = HEADER.unpack_from(data)
    return data, header[3], HEADER.size + header[2] * header[3]


def rewrite(copy: Path, data: bytearray) -> None:
    (copy / "graph.hnsw").write_bytes(bytes(data))
    fix_checksums(copy)


def refused(copy: Path, match: str) -> None:
    """The mapped load succeeds (the body is not read); a search raises, naming the index; the
    checked load refuses the file too."""
    index = mapped(copy)
    with pytest.raises(IndexFormatError, match=match) as caught:
        index.search(QUERIES, 10)
    assert str(copy) in str(caught.value)
    with pytest.raises(IndexFormatError, match=r"malformed|inconsistent"):
        DenseIndex.load(copy, mmap=True, verify=True)
    with pytest.raises(IndexFormatError):  # add reads it in full: refused, nothing added
        index.add(VECTORS[:2])
    assert index.num_documents == N


def test_level0_links_out_of_range(copy) -> None:
    data, record, _ = layout(copy)
    for element in range(N):  # every first link points past the last element
        struct.pack_into("<I", data, HEADER.size + element * record + 4, N + element)
    rewrite(copy, data)
    refused(copy, r"element \d+ are malformed")


def test_level0_counts_too_large(copy) -> None:
    data, record, _ = layout(copy)
    for element in range(N):
        struct.pack_into("<I", data, HEADER.size + element * record, 17)  # the most is 2M = 16
    rewrite(copy, data)
    refused(copy, r"element \d+ are malformed")


def test_labels_out_of_range_or_repeated(copy, tmp_path) -> None:
    data, record, _ = layout(copy)
    label_at = HEADER.unpack_from(data)[4]
    bad = bytearray(data)
    for element in range(N):
        struct.pack_into("<Q", bad, HEADER.size + element * record + label_at, 2**40)
    rewrite(copy, bad)
    refused(copy, r"element \d+ are malformed")
    repeated = copy_index(copy, tmp_path / "repeated")
    for element in range(N):
        struct.pack_into("<Q", data, HEADER.size + element * record + label_at, 0)
    rewrite(repeated, data)
    refused(repeated, "inconsistent")


def test_upper_level_sizes_broken(copy) -> None:
    data, _, upper = layout(copy)
    struct.pack_into("<I", data, upper, 3)  # element 0's upper links: not a whole level
    rewrite(copy, data)
    refused(copy, "upper-level links of element 0 are malformed")


def upper_list(data: bytearray, element: int, level: int) -> int:
    """Offset of ``element``'s link list at ``level`` (>= 1) in the graph file."""
    header = HEADER.unpack_from(data)
    at = HEADER.size + header[2] * header[3]
    for _ in range(element):
        at += 4 + struct.unpack_from("<I", data, at)[0]
    return at + 4 + (level - 1) * 4 * (1 + header[8])


@pytest.mark.parametrize("target", ["past the end", "a node below the level"])
def test_upper_level_link_broken(copy, target: str) -> None:
    """The entry point's top list is the first thing every search reads."""
    data, _, _ = layout(copy)
    header = HEADER.unpack_from(data)
    max_level, entry = header[6], header[7]
    assert max_level >= 1
    below = next(
        e for e in range(N) if struct.unpack_from("<I", data, upper_list(data, e, 1) - 4)[0] == 0
    )
    struct.pack_into("<II", data, upper_list(data, entry, max_level), 1, 10**6 if target ==
                     "past the end" else below)  # fmt: skip
    rewrite(copy, data)
    refused(copy, f"element {entry} are malformed")


def test_links_in_a_cycle_end(copy) -> None:
    """Every element linked to itself and the next only: the walk ends (visited marks), and
    every hit is scored exactly."""
    data, record, _ = layout(copy)
    for element in range(N):
        at = HEADER.size + element * record
        struct.pack_into("<III", data, at, 2, element, (element + 1) % N)
    rewrite(copy, data)
    index = mapped(copy)
    found = index.search(QUERIES[:3], 10)
    assert_rows_well_formed(found, N)
    exact = index.search(QUERIES[:3], N, exact=True)
    for row in range(3):
        scores = dict(zip(exact.ids[row], exact.scores[row], strict=True))
        assert [scores[i] for i in found.ids[row]] == list(found.scores[row])
