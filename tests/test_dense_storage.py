"""Saving and loading dense indexes: identical results and parameters (ef_search included) in
every load mode; the encoder must match; corrupt, truncated, crafted or mismatched directories
(the hnswlib graph above all) raise IndexFormatError; saves are atomic."""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from dense_oracle import HashingEncoder, clustered
from index_dirs import as_dense_format_1, copy_index, edit_manifest, fix_checksums, rewrite

from hybrid_engine import BM25Index, DenseIndex, IndexFormatError, __version__
from hybrid_engine.dense.format import FORMAT, FORMAT_VERSION

VECTORS = clustered(400, 16, seed=3)
QUERIES = clustered(25, 16, seed=4)
IDS = [f"doc-{i}" for i in range(400)]
GRAPH_HEADER = struct.Struct("<6QiI3QdQ")  # hnswlib 0.8 saveIndex header


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> tuple[DenseIndex, Path]:
    index = DenseIndex.from_vectors(
        VECTORS, ids=IDS, m=8, ef_construction=60, ef_search=37, exact_threshold=50
    )
    path = tmp_path_factory.mktemp("saved") / "dense"
    index.save(path)
    return index, path


@pytest.fixture
def copy(saved, tmp_path) -> Path:
    """A fresh, writable copy of the saved index to corrupt."""
    return copy_index(saved[1], tmp_path / "copy")


@pytest.fixture
def copy_v1(copy) -> Path:
    """The copy as format 1 wrote it: the graph as hnswlib's file ``graph.hnsw``."""
    return as_dense_format_1(copy)


def assert_same_results(a: DenseIndex, b: DenseIndex) -> None:
    for k in (1, 10, 399, 410):
        for exact in (False, True):
            ra, rb = a.search(QUERIES, k, exact=exact), b.search(QUERIES, k, exact=exact)
            np.testing.assert_array_equal(ra.ids, rb.ids)
            np.testing.assert_array_equal(ra.scores, rb.scores)


def edit_params(path: Path, **changes) -> None:
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["params"].update(changes)
    (path / "manifest.json").write_text(json.dumps(manifest))


# --- roundtrip ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mmap", [False, True])
@pytest.mark.parametrize("verify", [True, False])
def test_roundtrip_identical(saved, mmap: bool, verify: bool) -> None:
    index, path = saved
    loaded = DenseIndex.load(path, mmap=mmap, verify=verify)
    assert_same_results(index, loaded)
    assert loaded.doc_ids[:] == IDS and loaded.uses_graph
    assert (loaded.metric, loaded.dim, loaded.m, loaded.ef_construction) == ("cosine", 16, 8, 60)
    assert (loaded.ef_search, loaded.exact_threshold) == (37, 50)
    assert loaded._store._graph.ef == 37  # hnswlib does not save ef: the manifest does
    np.testing.assert_array_equal(loaded.vectors, index.vectors)
    assert isinstance(loaded._store._buffer, np.memmap) == mmap


def test_ef_search_changed_after_build_is_saved(saved, tmp_path) -> None:
    loaded = DenseIndex.load(saved[1])
    loaded.ef_search = 5
    loaded.save(tmp_path / "again")
    again = DenseIndex.load(tmp_path / "again")
    assert again.ef_search == 5 and again._store._graph.ef == 5
    assert_same_results(loaded, again)


@pytest.mark.parametrize("metric", ["cosine", "ip"])
def test_roundtrip_exact_index_without_graph(tmp_path, metric: str) -> None:
    index = DenseIndex.from_vectors(VECTORS, metric=metric)
    index.save(tmp_path / "idx")
    assert sorted(p.name for p in (tmp_path / "idx").iterdir()) == ["manifest.json", "vectors.npy"]
    loaded = DenseIndex.load(tmp_path / "idx")
    assert not loaded.uses_graph and not loaded.doc_ids.explicit and loaded.metric == metric
    assert_same_results(index, loaded)


def test_manifest_records_params_encoder_and_checksums(tmp_path) -> None:
    encoder = HashingEncoder(16)
    index = DenseIndex.from_vectors(VECTORS, encoder=encoder, exact_threshold=100)
    index.save(tmp_path / "idx")
    manifest = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert manifest["format"] == FORMAT and manifest["format_version"] == FORMAT_VERSION
    assert manifest["library_version"] == __version__
    assert manifest["params"] == {
        "metric": "cosine",
        "dim": 16,
        "m": 16,
        "ef_construction": 200,
        "ef_search": index.ef_search,
        "exact_threshold": 100,
        "quantization": None,
        "oversample": 1.0,
    }
    assert manifest["stats"] == {"num_documents": 400}
    assert manifest["doc_ids"] == "positions"
    assert manifest["encoder_model_hash"] == encoder.model_hash
    graph = index._store.graph
    assert manifest["graph"] == {"entry_point": graph.entry_point, "max_level": graph.max_level}
    files = ["links0.npy", "upper.npy", "upper_start.npy", "vectors.npy"]
    assert sorted(manifest["files"]) == files
    for name, info in manifest["files"].items():
        data = (tmp_path / "idx" / name).read_bytes()
        assert info == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def test_loaded_index_grows_and_saves_again(saved, tmp_path) -> None:
    loaded = DenseIndex.load(saved[1], mmap=True)
    extra = clustered(100, 16, seed=5)
    loaded.add(extra, ids=[f"new-{i}" for i in range(100)])
    assert len(loaded) == 500 and loaded._store._graph.element_count == 500
    np.testing.assert_array_equal(DenseIndex.load(saved[1]).vectors, saved[0].vectors)
    loaded.save(tmp_path / "grown")
    again = DenseIndex.load(tmp_path / "grown")
    assert again.doc_ids[499] == "new-99"
    assert_same_results(loaded, again)


def test_index_without_its_graph_saves_and_loads(tmp_path) -> None:
    """After a failed graph insert the index has no graph above the threshold (see
    test_a_failed_graph_insert_drops_the_graph_and_adds_nothing): it still saves and loads."""
    index = DenseIndex.from_vectors(VECTORS, exact_threshold=50)
    index._store._graph = None
    index.save(tmp_path / "idx")
    loaded = DenseIndex.load(tmp_path / "idx")
    assert not loaded.uses_graph
    assert_same_results(index, loaded)


# --- the encoder ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def text_index(tmp_path_factory) -> tuple[DenseIndex, Path]:
    encoder = HashingEncoder()
    index = DenseIndex.build([f"word{i} other{i % 7}" for i in range(60)], encoder=encoder)
    path = tmp_path_factory.mktemp("text") / "dense"
    index.save(path)
    return index, path


def test_load_with_the_same_encoder_searches_text(text_index) -> None:
    index, path = text_index
    loaded = DenseIndex.load(path, encoder=HashingEncoder())
    a, b = index.search(["word3 other3", "other5"], 5), loaded.search(["word3 other3", "other5"], 5)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.scores, b.scores)
    assert loaded.encoder_model_hash == index.encoder_model_hash


def test_load_without_an_encoder_searches_vectors_only(text_index) -> None:
    loaded = DenseIndex.load(text_index[1])
    assert loaded.encoder is None and loaded.encoder_model_hash is not None
    loaded.search(HashingEncoder().encode(["word3"]), 3)
    with pytest.raises(ValueError, match=r"pass encoder= to DenseIndex.load"):
        loaded.search("word3")


def test_load_with_another_model_is_refused(text_index) -> None:
    other = HashingEncoder(name="hashing-v2")
    with pytest.raises(ValueError, match=r"was built by the model with hash .* the encoder has"):
        DenseIndex.load(text_index[1], encoder=other)


def test_load_with_another_dim_is_refused(text_index) -> None:
    with pytest.raises(ValueError, match="the encoder makes 32-dimensional vectors, the index"):
        DenseIndex.load(text_index[1], encoder=HashingEncoder(32))


def test_index_from_vectors_takes_any_encoder_of_its_dim(tmp_path) -> None:
    DenseIndex.from_vectors(VECTORS).save(tmp_path / "idx")
    loaded = DenseIndex.load(tmp_path / "idx", encoder=HashingEncoder(16))
    assert loaded.search("text query", 2).ids.shape == (1, 2)


def test_load_with_a_non_encoder(text_index) -> None:
    with pytest.raises(TypeError, match="it must provide dim, model_hash and encode"):
        DenseIndex.load(text_index[1], encoder="minilm")


# --- refused directories ----------------------------------------------------------------------


def test_missing_path(tmp_path) -> None:
    with pytest.raises(IndexFormatError, match="is not a directory"):
        DenseIndex.load(tmp_path / "nope")


def test_bm25_index_is_not_a_dense_index(tmp_path) -> None:
    BM25Index.build(["some text"]).save(tmp_path / "bm25")
    with pytest.raises(
        IndexFormatError, match=f"holds format 'hybrid_engine.bm25', expected '{FORMAT}'"
    ):
        DenseIndex.load(tmp_path / "bm25")


@pytest.mark.parametrize("version", [FORMAT_VERSION + 1, 0, None])
def test_wrong_format_version(copy, version) -> None:
    edit_manifest(copy, format_version=version)
    with pytest.raises(IndexFormatError, match=r"format version .*rebuild the index"):
        DenseIndex.load(copy)


@pytest.mark.parametrize(
    "name", ["vectors.npy", "links0.npy", "upper.npy", "doc_id_bytes.npy", "doc_id_offsets.npy"]
)
def test_missing_file(copy, name: str) -> None:
    (copy / name).unlink()
    with pytest.raises(IndexFormatError, match=f"is missing {name}"):
        DenseIndex.load(copy)


@pytest.mark.parametrize(
    "name", ["vectors.npy", "links0.npy", "upper.npy", "doc_id_bytes.npy", "doc_id_offsets.npy"]
)
@pytest.mark.parametrize("verify", [True, False])
def test_truncated_file(copy, name: str, verify: bool) -> None:
    data = (copy / name).read_bytes()
    (copy / name).write_bytes(data[: len(data) // 2])
    with pytest.raises(IndexFormatError, match="is truncated or was changed"):
        DenseIndex.load(copy, verify=verify)


@pytest.mark.parametrize(
    "name", ["vectors.npy", "links0.npy", "upper.npy", "doc_id_bytes.npy", "doc_id_offsets.npy"]
)
def test_flipped_byte_fails_checksum(copy, name: str) -> None:
    file = copy / name
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0x10
    file.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match=f"{name} fails its sha256 check: it is corrupt"):
        DenseIndex.load(copy)


def test_graph_checksum_is_verified_even_without_verify(copy_v1) -> None:
    file = copy_v1 / "graph.hnsw"
    data = bytearray(file.read_bytes())
    data[-5] ^= 0x01
    file.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match=r"graph.hnsw fails its sha256 check"):
        DenseIndex.load(copy_v1, verify=False)


def test_truncated_vectors_with_matching_manifest(copy) -> None:
    data = (copy / "vectors.npy").read_bytes()
    (copy / "vectors.npy").write_bytes(data[:-64])
    fix_checksums(copy)
    with pytest.raises(IndexFormatError, match="is not a readable numpy array"):
        DenseIndex.load(copy)


def test_pickled_array_is_never_loaded(copy) -> None:
    rewrite(copy, "vectors", np.array([{"evil": 1}], dtype=object))
    with pytest.raises(IndexFormatError, match=r"holds Python objects.*refused; rebuild"):
        DenseIndex.load(copy)


@pytest.mark.parametrize("name", ["graph.bin", "../graph.hnsw", "vectors.pkl"])
def test_manifest_names_unexpected_file(copy, name: str) -> None:
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"][name] = {"sha256": "0", "bytes": 0}
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="unexpected file"):
        DenseIndex.load(copy)


def test_manifest_file_entry_not_a_dict(copy) -> None:
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"]["graph.hnsw"] = "abc"
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match=r"describes graph.hnsw as 'abc', not a dict"):
        DenseIndex.load(copy)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"metric": "l2"}, "unknown metric 'l2'"),
        ({"m": 1}, r"m must be an int in \[2, 10000\]"),
        ({"ef_search": 0}, "ef_search must be an int >= 1"),
        ({"ef_construction": "200"}, "ef_construction must be an int"),
        ({"exact_threshold": -3}, "exact_threshold must be an int >= 0"),
        ({"dim": 0}, "dim must be an int >= 1"),
        ({"extra": 1}, r"must set exactly \['dim', 'ef_construction', 'ef_search'"),
    ],
)
def test_bad_params(copy, changes, message) -> None:
    edit_params(copy, **changes)
    with pytest.raises(IndexFormatError, match=message):
        DenseIndex.load(copy)


def test_missing_param(copy) -> None:
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["params"]["ef_search"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match="must set exactly"):
        DenseIndex.load(copy)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("params", [1], "must set exactly"),
        ("stats", {}, "num_documents"),
        ("stats", {"num_documents": 0}, "num_documents must be an int >= 1"),
        ("doc_ids", "hashes", "doc_ids is 'hashes', not 'explicit' or 'positions'"),
        ("doc_ids", "positions", "doc_ids is .positions. but the id arrays are present"),
        ("encoder_model_hash", 5, "encoder_model_hash is 5, not a str or null"),
    ],
)
def test_bad_manifest_entries(copy, field, value, message) -> None:
    edit_manifest(copy, **{field: value})
    with pytest.raises(IndexFormatError, match=message):
        DenseIndex.load(copy)


def test_missing_encoder_hash_entry(copy) -> None:
    manifest = json.loads((copy / "manifest.json").read_text())
    del manifest["encoder_model_hash"]
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match=r"bad manifest entry .*encoder_model_hash"):
        DenseIndex.load(copy)


def test_vectors_of_another_dim_than_the_manifest(copy) -> None:
    edit_params(copy, dim=17)
    with pytest.raises(
        IndexFormatError,
        match=r"vectors is float32 of shape \(400, 16\), expected float32 of shape \(400, 17\)",
    ):
        DenseIndex.load(copy)


def test_more_vectors_than_the_manifest_counts(copy) -> None:
    edit_manifest(copy, stats={"num_documents": 399})
    with pytest.raises(IndexFormatError, match=r"expected float32 of shape \(399, 16\)"):
        DenseIndex.load(copy)


@pytest.mark.parametrize(
    "array, message",
    [
        (lambda v: v.astype(np.float64), "vectors is float64"),
        (lambda v: v[:, :15], r"shape \(400, 15\)"),
        (lambda v: v.reshape(-1), r"shape \(6400,\)"),
    ],
)
def test_bad_vectors_array(copy, array, message) -> None:
    rewrite(copy, "vectors", array(np.load(copy / "vectors.npy")))
    with pytest.raises(IndexFormatError, match=message):
        DenseIndex.load(copy)


@pytest.mark.parametrize(
    "name, corrupt",
    [
        ("doc_id_offsets", lambda o: o.__setitem__(3, o[2] - 1)),
        ("doc_id_offsets", lambda o: o.__setitem__(-1, o[-1] + 1)),
        ("doc_id_offsets", lambda o: o.__setitem__(0, 1)),
        ("doc_id_offsets", lambda o: o[:-1]),
        ("doc_id_offsets", lambda o: o.astype(np.int32)),
        ("doc_id_bytes", lambda b: b.astype(np.int8)),
        ("doc_id_bytes", lambda b: b.reshape(1, -1)),
    ],
)
def test_doc_id_arrays_do_not_delimit(copy, name, corrupt) -> None:
    array = np.load(copy / f"{name}.npy")
    changed = corrupt(array)
    rewrite(copy, name, array if changed is None else changed)
    with pytest.raises(IndexFormatError, match="doc_id_bytes and doc_id_offsets do not hold"):
        DenseIndex.load(copy)


# --- crafted graphs with consistent checksums: the graph check --------------------------------


def other_graph(copy: Path, tmp_path: Path, vectors: np.ndarray, **params) -> None:
    """Put the graph of another index in ``copy`` (manifest checksums fixed)."""
    settings = {"m": 8, "ef_construction": 60, "exact_threshold": 0, **params}
    DenseIndex.from_vectors(vectors, **settings).save(tmp_path / "other")
    as_dense_format_1(tmp_path / "other")
    (copy / "graph.hnsw").write_bytes((tmp_path / "other" / "graph.hnsw").read_bytes())
    fix_checksums(copy)


def test_graph_with_fewer_vectors_is_refused(copy_v1, tmp_path) -> None:
    other_graph(copy_v1, tmp_path, VECTORS[:399])
    with pytest.raises(IndexFormatError, match="the graph holds 399 vectors, the index 400"):
        DenseIndex.load(copy_v1)


@pytest.mark.parametrize(
    "vectors, params",
    [(VECTORS, {"m": 9}), (VECTORS, {"ef_construction": 61}), (np.hstack([VECTORS, VECTORS]), {})],
    ids=["m", "ef_construction", "dim"],
)
def test_graph_of_other_parameters_is_refused(copy_v1, tmp_path, vectors, params) -> None:
    other_graph(copy_v1, tmp_path, vectors, **params)
    with pytest.raises(
        IndexFormatError,
        match="does not describe a graph of 16-dimensional vectors with M=8, ef_construction=60",
    ):
        DenseIndex.load(copy_v1)


def graph_layout(file: Path) -> tuple[bytearray, dict[str, int]]:
    data = bytearray(file.read_bytes())
    h = GRAPH_HEADER.unpack_from(data)
    layout = {"count": h[2], "record": h[3], "label": h[4], "max_level": h[6], "entry": h[7]}
    layout["upper"] = GRAPH_HEADER.size + h[2] * h[3]
    return data, layout


def rewrite_graph(copy: Path, data: bytearray) -> None:
    (copy / "graph.hnsw").write_bytes(bytes(data))
    fix_checksums(copy)


def test_level0_link_out_of_range(copy_v1) -> None:
    data, layout = graph_layout(copy_v1 / "graph.hnsw")
    at = GRAPH_HEADER.size + 5 * layout["record"]
    assert struct.unpack_from("<I", data, at)[0] > 0  # element 5 has links
    struct.pack_into("<I", data, at + 4, 400)  # its first link: one past the last element
    rewrite_graph(copy_v1, data)
    with pytest.raises(IndexFormatError, match="the links or label of element 5 are malformed"):
        DenseIndex.load(copy_v1)


def test_level0_link_count_too_large(copy_v1) -> None:
    data, layout = graph_layout(copy_v1 / "graph.hnsw")
    struct.pack_into("<I", data, GRAPH_HEADER.size + 7 * layout["record"], 17)  # max is 2M = 16
    rewrite_graph(copy_v1, data)
    with pytest.raises(IndexFormatError, match="element 7 are malformed"):
        DenseIndex.load(copy_v1)


def test_duplicate_label(copy_v1) -> None:
    data, layout = graph_layout(copy_v1 / "graph.hnsw")
    label = GRAPH_HEADER.size + layout["label"]
    data[label + 9 * layout["record"] : label + 9 * layout["record"] + 8] = data[label : label + 8]
    rewrite_graph(copy_v1, data)
    with pytest.raises(IndexFormatError, match="element 9 are malformed"):
        DenseIndex.load(copy_v1)


def test_upper_level_link_out_of_range(copy_v1) -> None:
    data, layout = graph_layout(copy_v1 / "graph.hnsw")
    at, element = layout["upper"], 0
    while True:  # the first element with a level-1 link
        size = struct.unpack_from("<I", data, at)[0]
        if size and struct.unpack_from("<I", data, at + 4)[0] > 0:
            break
        at, element = at + 4 + size, element + 1
    struct.pack_into("<I", data, at + 8, 10**6)  # its first level-1 link
    rewrite_graph(copy_v1, data)
    with pytest.raises(IndexFormatError, match=f"element {element} are malformed"):
        DenseIndex.load(copy_v1)


def test_entry_point_out_of_range(copy_v1) -> None:
    data, _ = graph_layout(copy_v1 / "graph.hnsw")
    struct.pack_into("<I", data, 52, 400)  # enterpoint_node
    rewrite_graph(copy_v1, data)
    with pytest.raises(IndexFormatError, match="size, levels or entry point are inconsistent"):
        DenseIndex.load(copy_v1)


@pytest.mark.parametrize("cut", [4, 400, None])
def test_truncated_graph_with_matching_manifest(copy_v1, cut) -> None:
    data = (copy_v1 / "graph.hnsw").read_bytes()
    rewrite_graph(copy_v1, bytearray(data[: GRAPH_HEADER.size - 8] if cut is None else data[:-cut]))
    with pytest.raises(IndexFormatError, match=r"graph.hnsw: .*the index is corrupt"):
        DenseIndex.load(copy_v1)


def test_level_multiplier_checked(copy_v1) -> None:
    data, _ = graph_layout(copy_v1 / "graph.hnsw")
    struct.pack_into("<d", data, 80, 1e9)  # mult_: new elements would get absurd levels
    rewrite_graph(copy_v1, data)
    with pytest.raises(IndexFormatError, match="level multiplier"):
        DenseIndex.load(copy_v1)


# --- atomic saves -------------------------------------------------------------------------------


class _Unwritable:
    """An array whose write fails when the save reaches it (numpy asks for its data)."""

    def __array__(self, *args, **kwargs):
        raise OSError("disk full (simulated)")


class _FailingSave:
    """A graph whose links fail to write."""

    def __init__(self, graph) -> None:
        self._graph = graph

    def __getattr__(self, name: str):
        return getattr(self._graph, name)

    @property
    def arrays(self) -> dict:
        return {**self._graph.arrays, "upper": _Unwritable()}


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_failing_graph_write_keeps_previous_index(saved, copy) -> None:
    other = DenseIndex.from_vectors(VECTORS[:100] * 2, exact_threshold=10)
    other._store._graph = _FailingSave(other._store._graph)
    with pytest.raises(OSError, match="simulated"):
        other.save(copy)
    assert leftovers(copy.parent) == []
    assert_same_results(saved[0], DenseIndex.load(copy))


def test_refuses_to_overwrite_a_non_index_directory(saved, tmp_path) -> None:
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "notes.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="is not a hybrid_engine index"):
        saved[0].save(tmp_path / "precious")
    assert [p.name for p in (tmp_path / "precious").iterdir()] == ["notes.txt"]
