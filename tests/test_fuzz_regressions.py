"""The inputs the fuzz harnesses found (docs/hardening.md, "Fuzzing"), each with the error the
code now raises in place of the crash or the wrong exception it raised before."""

from __future__ import annotations

import json
import math
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from index_dirs import as_dense_format_1, fix_checksums
from sparse_oracle import HashingSparseEncoder

from hybrid_engine import BM25Index, DenseIndex, IndexFormatError, SparseVectors, SpladeIndex
from hybrid_engine.metadata import Filter, MetadataColumns
from hybrid_engine.metadata.filters import MAX_NESTING
from hybrid_engine.storage import delimits


def chain(depth: int, kind: str) -> dict:
    """A filter of ``depth`` nested dicts and lists: ``$not`` of ``$not`` ..., ``$and`` of a
    ``$and`` ..., or a field's ``$not`` of ``$not`` ... of ``$gt``."""
    if kind == "field":
        inner: dict = {"$gt": 1}
        for _ in range(depth - 2):
            inner = {"$not": inner}
        return {"a": inner}
    spec: dict = {"a": 1}
    for _ in range((depth - 1) // (1 if kind == "not" else 2)):
        spec = {"$not": spec} if kind == "not" else {"$and": [spec]}
    return spec


def nesting(value: object) -> int:
    """Dicts and lists nested in ``value`` (an independent count of the depth)."""
    if isinstance(value, dict):
        return 1 + max((nesting(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((nesting(v) for v in value), default=0)
    return 0


@pytest.mark.parametrize("kind", ["not", "and", "field"])
def test_a_deeply_nested_filter_is_a_value_error_not_a_recursion_error(kind: str) -> None:
    """Found by tests/fuzz/filters.py: 1,000 nested ``$not`` raised RecursionError from
    Filter.compile (a server answer of 500, a crash of a caller catching ValueError)."""
    columns = MetadataColumns.from_records([{"a": 2}, {"a": 0}, None])
    deepest = chain(MAX_NESTING, kind)
    assert nesting(deepest) <= MAX_NESTING
    assert Filter.compile(deepest).mask(columns).shape == (3,)
    assert nesting(chain(MAX_NESTING + 2, kind)) > MAX_NESTING
    for depth in (MAX_NESTING + 2, 1_000, 100_000):
        spec = chain(depth, kind)
        with pytest.raises(ValueError, match=f"more than {MAX_NESTING} deep"):
            Filter.compile(spec)


def test_a_self_containing_filter_is_a_value_error() -> None:
    spec: dict = {"$and": []}
    spec["$and"].append(spec)
    with pytest.raises(ValueError, match="deep"):
        Filter.compile(spec)


@pytest.fixture(scope="module")
def splade_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("splade") / "index"
    SpladeIndex.build(["a b", "b c", "c d"], encoder=HashingSparseEncoder(16)).save(path)
    return path


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("num_documents", 2**63),  # was OverflowError (len() of the ids)
        ("num_documents", 10**30),
        ("num_documents", 2**31),  # loaded: a count no int32 doc id reaches
        ("num_documents", "3"),  # loaded: int("3")
        ("num_documents", True),
        ("num_documents", 3.0),
        ("vocab_size", 2**63),
        ("vocab_size", "16"),
    ],
)
def test_a_splade_count_outside_int32_or_not_an_int_is_a_format_error(
    splade_dir: Path, tmp_path: Path, key: str, value: object
) -> None:
    """Found by tests/fuzz/load_splade.py: SpladeIndex.load trusted the manifest's counts."""
    path = tmp_path / "index"
    shutil.copytree(splade_dir, path)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["stats"][key] = value
    (path / "manifest.json").write_text(json.dumps(manifest))
    fix_checksums(path)
    with pytest.raises(IndexFormatError, match=key) as caught:
        SpladeIndex.load(path, encoder=HashingSparseEncoder(16))
    assert str(path) in str(caught.value)


@pytest.mark.parametrize("offsets", [np.zeros(0, np.int64), np.zeros((0, 1), np.int64)])
def test_splade_query_vectors_with_empty_offsets_are_a_value_error(offsets: np.ndarray) -> None:
    """Found by tests/fuzz/splade_search.py (input ``syjY1/XH3HHNyg==``): query vectors with no
    offsets at all raised IndexError from ``storage.delimits``."""
    index = SpladeIndex.build(["a b", "b c"], encoder=HashingSparseEncoder(16))
    vectors = SparseVectors(offsets, np.zeros(0, np.int32), np.zeros(0, np.float32))
    with pytest.raises(ValueError, match="empty offsets"):
        index.search(vectors, 3)
    assert not delimits(np.zeros(0, np.int64), np.zeros(0, np.int32), -1)


def test_inner_product_queries_beyond_the_float32_range_are_a_value_error() -> None:
    """Found by tests/fuzz/dense_search.py: finite float32 query values near 3e38 gave inner
    products past the float32 range, so several hits scored +inf and tied (ranked by position,
    not by score): a silently wrong ranking. A hit scored beyond float32 is now a ValueError;
    scores up to the float32 maximum still rank by score."""
    vectors = np.array([[1.0, 1.0], [0.5, 0.0], [0.25, 0.0]], np.float32)
    index = DenseIndex.from_vectors(vectors, metric="ip")
    for exact in (True, False):
        with pytest.raises(ValueError, match="row 1 has inner products"):
            index.search(np.array([[1.0, 1.0], [3e38, 3e38]], np.float32), 3, exact=exact)
        result = index.search(np.array([[1.7e38, 1.7e38]], np.float32), 3, exact=exact)
        np.testing.assert_array_equal(result.ids, [[0, 1, 2]])
        np.testing.assert_allclose(result.scores, [[3.4e38, 8.5e37, 4.25e37]], rtol=1e-6)
    cosine = DenseIndex.from_vectors(vectors)
    assert cosine.search(np.array([[3e38, 0.0]], np.float32), 1).scores[0, 0] == 1.0


def test_a_malformed_graph_is_reported_at_the_path_the_user_gave(tmp_path: Path) -> None:
    """Found by tests/fuzz/load_dense.py: the IndexFormatError of a malformed HNSW graph
    named ``/proc/self/fd/N/graph.hnsw`` (the pinned directory ``open_index_dir`` reads
    through), not the index directory."""
    rng = np.random.default_rng(0)
    path = tmp_path / "dense"
    DenseIndex.from_vectors(
        rng.standard_normal((40, 4)).astype(np.float32), exact_threshold=8, m=4
    ).save(path)
    as_dense_format_1(path)  # format 1: the graph as hnswlib's file
    graph = bytearray((path / "graph.hnsw").read_bytes())
    first_link = struct.calcsize("<6QiI3QdQ") + 4  # element 0's level-0 record: count, links
    graph[first_link : first_link + 4] = (2**32 - 1).to_bytes(4, "little")
    (path / "graph.hnsw").write_bytes(bytes(graph))
    fix_checksums(path)
    with pytest.raises(IndexFormatError, match="malformed") as caught:
        DenseIndex.load(path)
    assert str(path / "graph.hnsw") in str(caught.value)
    assert "/proc/self" not in str(caught.value)


@pytest.mark.parametrize("k", [1, 2])
def test_exact_search_of_overflowing_float32_products_finds_the_hits(k: int) -> None:
    """Found by tests/fuzz/dense_search.py (input ``F6SkpKSkpKSkpKSkpKQuFxcuFw==``): when the
    float32 products that pick candidates overflowed, the k-th score was inf, the candidate
    threshold NaN, and an exact search returned no hits at all. The exact scores (float64
    sums) of these fit float32, so they rank as usual."""
    vectors = np.array([[1, 1, 1], [0.5, 0.5, 0.5], [0, 0, 1], [0, 0, 0.5]], np.float32)
    index = DenseIndex.from_vectors(vectors, metric="ip")
    query = np.array([[3e38, 3e38, -3e38]], np.float32)
    result = index.search(query, k, exact=True)
    np.testing.assert_array_equal(result.ids, [[0, 1][:k]])
    np.testing.assert_allclose(result.scores, [[3e38, 1.5e38][:k]], rtol=1e-6)


def test_cancelling_float32_extremes_are_scored_within_the_summation_bound() -> None:
    """Found by tests/fuzz/dense_search.py in CI (input ``wXp6gICAgHqAgP3////9/////8D//////w==``):
    a query with two components of 3.4e38 against a document whose matching components
    cancel (-0.603, +0.603) scored 0.0, the exactly rounded score being -0.226: the float64 sum
    loses the small products next to the large ones. The harness had compared with a relative
    tolerance; the contract is the sum's forward error bound (``summation_bounds``), which
    this search meets, as does a well-conditioned one to 1e-6."""
    from tests.fuzz.dense_search import summation_bounds

    s = 0.30151135
    vectors = np.array([[-s, s, s, 0, -2 * s, 0, 2 * s, 0], [1, 0, 0, 0, 0, 0, 0, 0]], np.float32)
    index = DenseIndex.from_vectors(vectors, metric="ip")
    extreme = np.array([[-0.25, -0.75, -0.25, -0.75, 3.4e38, -0.5, 3.4e38, 1.0]], np.float32)
    plain = np.array([[-0.25, -0.75, -0.25, -0.75, 0.5, -0.5, 0.5, 1.0]], np.float32)
    for query in (extreme, plain):
        exact = [math.fsum(float(v) * float(q) for v, q in zip(row, query[0])) for row in vectors]
        got = index.search(query, 2, exact=True)
        scores = dict(zip(got.ids[0].tolist(), got.scores[0].tolist()))
        bound = summation_bounds(vectors, query, "ip")[0]
        for position, want in enumerate(exact):
            assert abs(scores[position] - want) <= 1e-6 + bound
    assert summation_bounds(vectors, plain, "ip")[0] < 1e-5


def test_sparse_scores_beyond_float32_are_a_value_error() -> None:
    """Found by tests/fuzz/load_splade.py (then by hand for query weights): SPLADE query
    weights near 3e38 (finite float32) scored hits +inf, tied and ranked by position (doc 0
    before doc 1 although doc 1 scores more with smaller weights); the same for BM25's
    weighted queries. Such a search is now a ValueError; large scores that fit still rank."""
    encoder = HashingSparseEncoder(16)
    index = SpladeIndex.build(["a", "b", "a a a a b"], encoder=encoder)
    term = encoder.encode(["a"]).terms[:1]
    for weight, raises in ((1e30, False), (3e38, True)):
        query = SparseVectors(np.array([0, 1], np.int64), term, np.array([weight], np.float32))
        if raises:
            with pytest.raises(ValueError, match="beyond the float32 range"):
                index.search(query, 3)
        else:
            assert np.all(np.isfinite(index.search(query, 3).scores[0, :2]))
    bm25 = BM25Index.build(["walk", "walk walk"] + ["run"] * 20)  # idf(walk) > 2
    assert np.isfinite(bm25.search_weighted([{"walk": 1e30}], 2).scores).all()
    with pytest.raises(ValueError, match="beyond the float32 range"):
        bm25.search_weighted([{"walk": 3e38}], 2)


@pytest.mark.parametrize("scale", [1e308, 2e36])
def test_a_splade_scale_whose_impacts_pass_float32_is_a_format_error(
    splade_dir: Path, tmp_path: Path, scale: float
) -> None:
    """Found by tests/fuzz/load_splade.py: a manifest scale of 1e308 (finite, positive) loaded
    and every search scored inf. The weight of impact 255 must be a float32."""
    path = tmp_path / "index"
    shutil.copytree(splade_dir, path)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["quantization"]["scale"] = scale
    (path / "manifest.json").write_text(json.dumps(manifest))
    fix_checksums(path)
    with pytest.raises(IndexFormatError, match="scale"):
        SpladeIndex.load(path, encoder=HashingSparseEncoder(16))


@pytest.mark.parametrize("shape", [(1, 2), (2, 1)])
def test_splade_query_vectors_of_2d_terms_are_a_value_error(shape: tuple[int, int]) -> None:
    """Found by tests/fuzz/splade_search.py: terms and weights of one 2-d shape passed the
    checks (offsets delimit their first axis) and reached the numba kernel, which raised its
    own TypingError."""
    index = SpladeIndex.build(["a b", "b c"], encoder=HashingSparseEncoder(16))
    offsets = np.array([0, shape[0]], np.int64)
    vectors = SparseVectors(offsets, np.zeros(shape, np.int32), np.ones(shape, np.float32))
    with pytest.raises(ValueError, match="1-d"):
        index.search(vectors, 3)


def npy_with_header(header: bytes) -> bytes:
    """A version 1.0 .npy file whose header text is ``header`` (padded as numpy pads it)."""
    padded = header + b" " * (-(10 + len(header) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(padded).to_bytes(2, "little") + padded


@pytest.mark.parametrize(
    "header",
    [
        b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,",  # was tokenize.TokenError
        b"{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} )",  # unbalanced
        b"{'descr': '<f4' 'fortran_order': False, 'shape': (3,)}",  # SyntaxError
    ],
)
def test_an_array_file_whose_header_does_not_parse_is_a_format_error(
    tmp_path: Path, header: bytes
) -> None:
    """Found by tests/fuzz/load_dense.py: an .npy header the tokenizer rejects raised
    tokenize.TokenError from numpy.load, which read_index_dir did not catch (every loader, and
    the live index's deletion masks, read arrays through it)."""
    path = tmp_path / "dense"
    DenseIndex.from_vectors(np.eye(3, dtype=np.float32)).save(path)
    (path / "vectors.npy").write_bytes(npy_with_header(header) + bytes(12))
    fix_checksums(path)
    for mmap in (False, True):
        with pytest.raises(IndexFormatError, match="not a readable numpy array") as caught:
            DenseIndex.load(path, mmap=mmap)
        assert str(path / "vectors.npy") in str(caught.value)
