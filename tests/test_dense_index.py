"""DenseIndex: the exact path equals a brute-force oracle (ids, scores, tie order, padding),
the HNSW path reaches the recall it promises with exact scores, adds keep both paths right,
text goes through the encoder, and bad input raises an error that names the problem."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from dense_oracle import (
    HashingEncoder,
    assert_rows_well_formed,
    clustered,
    knn,
    knn_float64,
    recall,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hybrid_engine import DenseIndex, SearchResult
from hybrid_engine.dense import hnsw as dense_hnsw
from hybrid_engine.dense.params import DEFAULT_EF_SEARCH, DEFAULT_EXACT_THRESHOLD

RNG = np.random.default_rng(0)
VECTORS = RNG.standard_normal((300, 16)).astype(np.float32)
QUERIES = RNG.standard_normal((20, 16)).astype(np.float32)


def assert_equals_oracle(result: SearchResult, vectors, queries, k: int, metric: str) -> None:
    ids, scores = knn(vectors, queries, k, metric)
    np.testing.assert_array_equal(result.ids, ids)
    np.testing.assert_array_equal(result.scores, scores)


# --- the exact path ---------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["cosine", "ip"])
@pytest.mark.parametrize("k", [1, 7, 300, 311])
def test_exact_path_equals_oracle(metric: str, k: int) -> None:
    index = DenseIndex.from_vectors(VECTORS, metric=metric)
    assert not index.uses_graph
    result = index.search(QUERIES, k)
    assert_equals_oracle(result, VECTORS, QUERIES, k, metric)
    assert_rows_well_formed(result, len(VECTORS))


def test_one_query_at_a_time_equals_the_batch() -> None:
    # Batches of 16 queries or more score through BLAS, smaller ones through a numba kernel.
    index = DenseIndex.from_vectors(VECTORS)
    batch = index.search(QUERIES, 10)
    for row, query in enumerate(QUERIES):
        one = index.search(query, 10)
        np.testing.assert_array_equal(one.ids[0], batch.ids[row])
        np.testing.assert_array_equal(one.scores[0], batch.scores[row])


def test_ties_rank_by_ascending_position() -> None:
    # Each of 30 vectors appears 4 times at scattered positions: every score is a 4-way tie.
    base = RNG.standard_normal((30, 8)).astype(np.float32)
    vectors = base[RNG.permutation(np.repeat(np.arange(30), 4))]
    index = DenseIndex.from_vectors(vectors)
    for k in (1, 2, 3, 5, 6, 11, 120, 125):
        assert_equals_oracle(index.search(QUERIES[:, :8], k), vectors, QUERIES[:, :8], k, "cosine")


def test_integer_ties_under_inner_product() -> None:
    vectors = RNG.integers(-2, 3, size=(200, 5)).astype(np.float32)
    queries = RNG.integers(-2, 3, size=(15, 5)).astype(np.float32)
    index = DenseIndex.from_vectors(vectors, metric="ip")
    for k in (1, 4, 50, 199, 200, 250):
        assert_equals_oracle(index.search(queries, k), vectors, queries, k, "ip")


def test_exact_despite_float32_cancellation() -> None:
    # In float32, 2**24 + 1 - 2**24 sums to 0 (or 1, by the order): the exact score is 1.
    vectors = np.array([[0.75, 0, 0], [2.0**24, 1, -(2.0**24)], [0.5, 0, 0]], dtype=np.float32)
    index = DenseIndex.from_vectors(vectors, metric="ip")
    result = index.search(np.ones(3), 2)
    np.testing.assert_array_equal(result.ids, [[1, 0]])
    np.testing.assert_array_equal(result.scores, [[1.0, 0.75]])


def test_k_above_the_number_of_documents_pads() -> None:
    index = DenseIndex.from_vectors(VECTORS[:5])
    result = index.search(QUERIES, 8)
    assert (result.ids[:, 5:] == -1).all() and (result.scores[:, 5:] == -np.inf).all()
    assert sorted(result.ids[0, :5]) == [0, 1, 2, 3, 4]


small_ints = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 25), st.integers(1, 6)),
    elements=st.integers(-3, 3).map(float),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(vectors=small_ints, data=st.data(), k=st.integers(1, 30))
def test_property_exact_path_equals_oracle(vectors, data, k) -> None:
    dim = vectors.shape[1]
    queries = data.draw(hnp.arrays(np.float32, (3, dim), elements=st.integers(-3, 3).map(float)))
    metric = data.draw(st.sampled_from(["cosine", "ip"]))
    if metric == "cosine":
        vectors = vectors[np.abs(vectors).sum(axis=1) > 0]
        queries = queries[np.abs(queries).sum(axis=1) > 0]
        if len(vectors) == 0:
            return
    index = DenseIndex.from_vectors(vectors, metric=metric)
    result = index.search(queries, k)
    assert_equals_oracle(result, vectors, queries, k, metric)
    assert_rows_well_formed(result, len(vectors))


# --- the HNSW path ----------------------------------------------------------------------------

GRAPH_VECTORS = clustered(3000, 32, seed=1)
GRAPH_QUERIES = clustered(200, 32, seed=2)


@pytest.fixture(scope="module")
def graph_index() -> DenseIndex:
    return DenseIndex.from_vectors(GRAPH_VECTORS, exact_threshold=100)


def test_hnsw_recall_at_default_ef(graph_index: DenseIndex) -> None:
    assert graph_index.uses_graph and graph_index.ef_search == DEFAULT_EF_SEARCH[None]
    result = graph_index.search(GRAPH_QUERIES, 10)
    truth = knn_float64(GRAPH_VECTORS, GRAPH_QUERIES, 10, "cosine")
    assert recall(result.ids, truth) >= 0.99
    assert_rows_well_formed(result, len(GRAPH_VECTORS))


def test_hnsw_scores_are_exact_scores_of_returned_ids(graph_index: DenseIndex) -> None:
    result = graph_index.search(GRAPH_QUERIES[:30], 10)
    exact = graph_index.search(GRAPH_QUERIES[:30], len(GRAPH_VECTORS), exact=True)
    for row in range(30):
        score_of = dict(zip(exact.ids[row].tolist(), exact.scores[row].tolist()))
        assert result.scores[row].tolist() == [score_of[i] for i in result.ids[row].tolist()]


def test_exact_flag_equals_oracle_on_a_graph_index(graph_index: DenseIndex) -> None:
    result = graph_index.search(GRAPH_QUERIES[:5], 12, exact=True)
    assert_equals_oracle(result, GRAPH_VECTORS, GRAPH_QUERIES[:5], 12, "cosine")


def test_low_ef_search_costs_recall_and_is_restorable(graph_index: DenseIndex) -> None:
    truth = knn_float64(GRAPH_VECTORS, GRAPH_QUERIES, 10, "cosine")
    graph_index.ef_search = 1
    try:
        # hnswlib uses max(ef, k): ef_search=1 still finds k candidates.
        low = recall(graph_index.search(GRAPH_QUERIES, 10).ids, truth)
    finally:
        graph_index.ef_search = DEFAULT_EF_SEARCH[None]
    assert low < recall(graph_index.search(GRAPH_QUERIES, 10).ids, truth)


def test_k_at_or_above_n_on_a_graph_index_is_exact() -> None:
    index = DenseIndex.from_vectors(VECTORS[:40], exact_threshold=10)
    assert index.uses_graph
    for k in (40, 45):
        assert_equals_oracle(index.search(QUERIES, k), VECTORS[:40], QUERIES, k, "cosine")


class _Refusing:
    """A graph whose searches fail as hnswlib's do when it reaches fewer than k vectors."""

    def knn_query(self, *args, **kwargs):
        raise RuntimeError("Cannot return the results in a contiguous 2D array")


def test_hnswlib_refusal_falls_back_to_exact() -> None:
    index = DenseIndex.from_vectors(VECTORS, exact_threshold=10)
    index._store._graph = _Refusing()
    assert_equals_oracle(index.search(QUERIES, 10), VECTORS, QUERIES, 10, "cosine")


def test_concurrent_searches_equal_sequential(graph_index: DenseIndex) -> None:
    batches = [GRAPH_QUERIES[i : i + 10] for i in range(0, 200, 10)]
    expected = [graph_index.search(b, 10, num_threads=1) for b in batches]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda b: graph_index.search(b, 10, num_threads=1), batches))
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)
    both = graph_index.search(GRAPH_QUERIES, 10, num_threads=2)
    np.testing.assert_array_equal(both.ids, np.concatenate([r.ids for r in expected]))


# --- add ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["cosine", "ip"])
def test_add_on_the_exact_path(metric: str) -> None:
    index = DenseIndex.from_vectors(VECTORS[:100], metric=metric)
    index.add(VECTORS[100:250])
    index.add(VECTORS[250])  # one vector, shape (dim,)
    for start in range(251, 300, 7):  # many small adds: the buffer grows
        index.add(VECTORS[start : start + 7])
    assert len(index) == 300 and not index.uses_graph
    assert_equals_oracle(index.search(QUERIES, 9), VECTORS, QUERIES, 9, metric)
    np.testing.assert_array_equal(
        index.vectors, DenseIndex.from_vectors(VECTORS, metric=metric).vectors
    )


def test_add_on_the_graph_path() -> None:
    index = DenseIndex.from_vectors(GRAPH_VECTORS[:1000], exact_threshold=100)
    for start in range(1000, 3000, 250):  # the graph grows past its capacity several times
        index.add(GRAPH_VECTORS[start : start + 250])
    assert index.uses_graph and len(index) == 3000
    assert index._store._graph.element_count == 3000
    truth = knn_float64(GRAPH_VECTORS, GRAPH_QUERIES, 10, "cosine")
    assert recall(index.search(GRAPH_QUERIES, 10).ids, truth) >= 0.99
    assert_equals_oracle(
        index.search(GRAPH_QUERIES[:5], 10, exact=True),
        GRAPH_VECTORS,
        GRAPH_QUERIES[:5],
        10,
        "cosine",
    )


def test_add_crossing_the_threshold_builds_the_graph() -> None:
    index = DenseIndex.from_vectors(GRAPH_VECTORS[:150], exact_threshold=200)
    assert not index.uses_graph and "exact" in repr(index)
    index.add(GRAPH_VECTORS[150:200])
    assert not index.uses_graph  # 200 is still at the threshold
    index.add(GRAPH_VECTORS[200:600])
    assert index.uses_graph and index._store._graph.element_count == 600
    assert index._store._graph.ef == index.ef_search
    truth = knn_float64(GRAPH_VECTORS[:600], GRAPH_QUERIES, 10, "cosine")
    assert recall(index.search(GRAPH_QUERIES, 10).ids, truth) >= 0.99


def test_a_failed_graph_insert_drops_the_graph_and_adds_nothing(monkeypatch) -> None:
    def failing(*args, **kwargs):
        raise MemoryError("simulated")

    index = DenseIndex.from_vectors(VECTORS[:200], exact_threshold=50)
    with monkeypatch.context() as patch:
        patch.setattr(dense_hnsw, "extend", failing)
        with pytest.raises(MemoryError, match="simulated"):
            index.add(VECTORS[200:])
    assert len(index) == 200 and not index.uses_graph
    assert_equals_oracle(index.search(QUERIES, 5), VECTORS[:200], QUERIES, 5, "cosine")
    index.add(VECTORS[200:])  # builds the graph again
    assert index.uses_graph and index._store._graph.element_count == 300


def test_add_texts_and_ids() -> None:
    encoder = HashingEncoder()
    docs = [{"_id": f"d{i}", "title": f"t{i % 3}", "text": f"word{i} shared"} for i in range(10)]
    index = DenseIndex.build(docs[:6], encoder=encoder)
    index.add(docs[6:])
    assert index.doc_ids[:] == [f"d{i}" for i in range(10)]
    whole = DenseIndex.build(docs, encoder=encoder)
    np.testing.assert_array_equal(index.vectors, whole.vectors)
    index.add(encoder.encode(["extra words"]), ids=["x1"])
    assert index.doc_ids[10] == "x1" and len(index) == 11
    assert index.search("extra words", 1).ids[0, 0] == 10


@pytest.mark.parametrize(
    "docs, kwargs, message",
    [
        ([{"_id": "d1", "text": "again"}], {}, "duplicate document '_id' 'd1': the index already"),
        ([{"text": "no id"}], {}, "give every new document an '_id' too"),
        ([{"_id": "n1", "text": "x"}, {"_id": "n1", "text": "y"}], {}, "duplicate document"),
        (["text"], {"ids": ["a"]}, "ids= goes with vectors"),
    ],
)
def test_add_refuses_inconsistent_ids(docs, kwargs, message) -> None:
    index = DenseIndex.build(
        [{"_id": f"d{i}", "text": f"w{i}"} for i in range(3)], encoder=HashingEncoder()
    )
    with pytest.raises(ValueError, match=message):
        index.add(docs, **kwargs)
    assert len(index) == 3


def test_add_vectors_follows_the_id_mode() -> None:
    explicit = DenseIndex.from_vectors(VECTORS[:3], ids=["a", "b", "c"])
    with pytest.raises(ValueError, match="pass ids= with one str per new vector"):
        explicit.add(VECTORS[3:5])
    with pytest.raises(ValueError, match="duplicate document '_id' 'b'"):
        explicit.add(VECTORS[3:5], ids=["d", "b"])
    with pytest.raises(ValueError, match="ids has 1 entries for 2 vectors"):
        explicit.add(VECTORS[3:5], ids=["d"])
    positional = DenseIndex.from_vectors(VECTORS[:3])
    with pytest.raises(ValueError, match="add vectors without ids="):
        positional.add(VECTORS[3:5], ids=["d", "e"])
    with pytest.raises(ValueError, match="add documents without '_id'"):
        DenseIndex.build(["a"], encoder=HashingEncoder()).add([{"_id": "x", "text": "b"}])
    assert len(explicit) == len(positional) == 3


def test_add_nothing_is_a_no_op() -> None:
    index = DenseIndex.from_vectors(VECTORS[:3], ids=["a", "b", "c"], encoder=HashingEncoder(16))
    index.add([])
    index.add(np.empty((0, 16), dtype=np.float32), ids=[])
    assert len(index) == 3


# --- texts and the encoder ------------------------------------------------------------------

DOCS = [
    {"_id": "cats", "title": "Cats", "text": "cats purr and sleep"},
    {"_id": "dogs", "title": "Dogs", "text": "dogs bark and fetch"},
    {"_id": "fish", "text": "fish swim in water"},
    {"_id": "birds", "text": "birds fly and sing"},
]


def test_build_from_texts() -> None:
    encoder = HashingEncoder()
    index = DenseIndex.build(iter(DOCS), encoder=encoder, batch_size=3)
    assert encoder.calls == [(4, 3)]  # the whole chunk at once, the encoder's batch size 3
    assert index.doc_ids[:] == ["cats", "dogs", "fish", "birds"]
    assert index.encoder is encoder and index.encoder_model_hash == encoder.model_hash
    texts = [f"{d['title']} {d['text']}" if "title" in d else d["text"] for d in DOCS]
    # The index scales the encoder's rows to unit length again, in float64: equal to ~1 ulp.
    np.testing.assert_allclose(index.vectors, encoder.encode(texts), rtol=0, atol=1e-7)
    result = index.search(["fish swim", "dogs bark"], 2)
    assert result.ids[:, 0].tolist() == [2, 1]
    by_vector = index.search(encoder.encode(["fish swim", "dogs bark"]), 2)
    np.testing.assert_array_equal(result.ids, by_vector.ids)
    np.testing.assert_array_equal(result.scores, by_vector.scores)
    assert index.search("fish", 1).ids.shape == (1, 1)


def test_plain_string_corpus_has_positional_ids() -> None:
    index = DenseIndex.build(["a b", "c d", "e"], encoder=HashingEncoder())
    assert not index.doc_ids.explicit and index.doc_ids[2] == "2"


def test_text_queries_need_an_encoder() -> None:
    index = DenseIndex.from_vectors(VECTORS)
    with pytest.raises(ValueError, match=r"no text encoder.*pass encoder= to DenseIndex.load"):
        index.search("some text")
    with pytest.raises(ValueError, match="cannot add texts: this index has no text encoder"):
        index.add(["some text"])


class _Returns(HashingEncoder):
    def __init__(self, fn) -> None:
        super().__init__()
        self._fn = fn

    def encode(self, texts, *, batch_size=32, show_progress=False):
        return self._fn(super().encode(texts))


@pytest.mark.parametrize(
    "fn, error, message",
    [
        (lambda x: x.astype(np.float64), TypeError, "returned dtype float64; a TextEncoder must"),
        (lambda x: x.tolist(), TypeError, "returned list"),
        (
            lambda x: x[:, :10],
            ValueError,
            r"returned shape \(2, 10\) for 2 texts; expected \(2, 48\)",
        ),
        (lambda x: x[:1], ValueError, r"returned shape \(1, 48\) for 2 texts"),
        (lambda x: x * np.nan, ValueError, "encoder output row 0 holds NaN"),
        (lambda x: x * 0, ValueError, "encoder output row 0 is all zeros"),
    ],
)
def test_bad_encoder_output(fn, error, message) -> None:
    with pytest.raises(error, match=message):
        DenseIndex.build(["one text", "two texts"], encoder=_Returns(fn))
    index = DenseIndex.build(["one text", "two texts"], encoder=HashingEncoder())
    index._encoder = _Returns(fn)
    with pytest.raises(error, match=message):
        index.search(["query one", "query two"])


@pytest.mark.parametrize(
    "encoder, error, message",
    [
        (object(), TypeError, r"lacks \['dim', 'model_hash', 'encode'\]"),
        (type("E", (), {"dim": 4, "model_hash": "x", "encode": 5})(), TypeError, "callable encode"),
        (
            type("E", (), {"dim": 0, "model_hash": "x", "encode": len})(),
            ValueError,
            "encoder.dim must be an int >= 1",
        ),
        (
            type("E", (), {"dim": 4, "model_hash": None, "encode": len})(),
            TypeError,
            "model_hash must be a str",
        ),
    ],
)
def test_not_an_encoder(encoder, error, message) -> None:
    with pytest.raises(error, match=message):
        DenseIndex.build(["text"], encoder=encoder)


def test_from_vectors_with_an_encoder_of_another_dim() -> None:
    with pytest.raises(ValueError, match="the encoder makes 48-dimensional vectors, these have 16"):
        DenseIndex.from_vectors(VECTORS, encoder=HashingEncoder())


# --- properties ---------------------------------------------------------------------------------


def test_properties() -> None:
    source = VECTORS.copy()
    index = DenseIndex.from_vectors(
        source,
        ids=[f"v{i}" for i in range(300)],
        m=8,
        ef_construction=50,
        ef_search=33,
        exact_threshold=100,
    )
    assert (index.dim, index.metric, index.num_documents, len(index)) == (16, "cosine", 300, 300)
    assert (index.m, index.ef_construction, index.ef_search, index.exact_threshold) == (
        8,
        50,
        33,
        100,
    )
    assert index.uses_graph and index._store._graph.ef == 33 and index.encoder is None
    assert index.doc_ids[299] == "v299" and index.encoder_model_hash is None
    assert repr(index) == (
        "DenseIndex(300 documents, dim=16, metric='cosine', HNSW m=8 ef_construction=50 "
        "ef_search=33)"
    )
    np.testing.assert_array_equal(source, VECTORS)  # the input is copied, not normalised
    np.testing.assert_allclose(np.linalg.norm(index.vectors, axis=1), 1, rtol=1e-6)
    with pytest.raises(ValueError, match="read-only"):
        index.vectors[0, 0] = 1
    index.ef_search = 77
    assert index.ef_search == 77 and index._store._graph.ef == 77
    ip = DenseIndex.from_vectors(np.asfortranarray(VECTORS), metric="ip")
    np.testing.assert_array_equal(ip.vectors, VECTORS)
    assert ip.vectors.flags.c_contiguous and ip.vectors.dtype == np.float32
    assert DEFAULT_EXACT_THRESHOLD >= 1 and DEFAULT_EF_SEARCH[None] >= 10


def test_query_dtypes_and_layouts_agree() -> None:
    index = DenseIndex.from_vectors(VECTORS)
    expected = index.search(QUERIES, 5)
    for queries in (
        QUERIES.astype(np.float64),
        np.asfortranarray(QUERIES),
        np.repeat(QUERIES, 2, axis=1)[:, ::2],
        QUERIES.tolist(),
        tuple(map(tuple, QUERIES.tolist())),
    ):
        got = index.search(queries, 5)
        np.testing.assert_array_equal(got.ids, expected.ids)
        np.testing.assert_array_equal(got.scores, expected.scores)
    one = index.search(QUERIES[3], 5)
    np.testing.assert_array_equal(one.ids, expected.ids[3:4])
    assert index.search([], 5).ids.shape == (0, 5)
    assert index.search(np.empty((0, 16)), 5).ids.shape == (0, 5)
    ints = DenseIndex.from_vectors(np.arange(12).reshape(3, 4), metric="ip")
    assert ints.search(np.ones(4, dtype=np.int8), 1).ids[0, 0] == 2


# --- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "queries, error, message",
    [
        (np.ones((2, 15)), ValueError, "query vectors have dimension 15, the index's vectors 16"),
        (np.ones(17), ValueError, "dimension 17"),
        (np.ones((2, 2, 16)), ValueError, r"must have shape \(dim,\) or \(n, dim\)"),
        (np.full((2, 16), np.nan), ValueError, "query vectors row 0 holds NaN or infinite"),
        (np.vstack([np.ones(16), np.full(16, np.inf)]), ValueError, "row 1 holds NaN"),
        (np.full((1, 16), 1e39), ValueError, "beyond the float32 range"),
        (np.zeros((1, 16)), ValueError, "query vectors row 0 is all zeros.*metric='ip'"),
        (np.array([["a"] * 16]), TypeError, "must be numeric.*dtype <U1"),
        (["text", 1.0], TypeError, "query 1 is float, expected str; queries are either all str"),
        (np.array(["a", 2], dtype=object), TypeError, "query 1 is int, expected str"),
        ([[1.0] * 16, [1.0]], TypeError, "numpy cannot read it"),
        (None, TypeError, "dtype object"),
        (np.ones((1, 16), dtype=complex), TypeError, "dtype complex128"),
        (np.ones((1, 16), dtype=bool), TypeError, "dtype bool"),
        (5.0, ValueError, r"got shape \(\)"),
    ],
)
def test_bad_queries(queries, error, message) -> None:
    index = DenseIndex.from_vectors(VECTORS, encoder=HashingEncoder(16))
    with pytest.raises(error, match=message):
        index.search(queries)


def test_zero_query_is_fine_under_inner_product() -> None:
    index = DenseIndex.from_vectors(VECTORS, metric="ip")
    result = index.search(np.zeros(16), 3)
    np.testing.assert_array_equal(result.ids, [[0, 1, 2]])
    np.testing.assert_array_equal(result.scores, [[0, 0, 0]])


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3", None])
def test_bad_k(k) -> None:
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        DenseIndex.from_vectors(VECTORS).search(QUERIES, k)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"metric": "l2"}, r"unknown metric 'l2'; choose one of \['cosine', 'ip'\]"),
        ({"m": 1}, r"m must be an int in \[2, 10000\], got 1"),
        ({"m": 20_000}, r"m must be an int in \[2, 10000\]"),
        ({"ef_construction": 0}, "ef_construction must be an int >= 1"),
        ({"ef_search": 0}, "ef_search must be an int >= 1, got 0"),
        ({"ef_search": 2.5}, "ef_search must be an int"),
        ({"exact_threshold": -1}, "exact_threshold must be an int >= 0"),
        ({"num_threads": 0}, "num_threads must be a positive int or None"),
    ],
)
def test_bad_parameters(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        DenseIndex.from_vectors(VECTORS, **kwargs)
    with pytest.raises(ValueError, match=message):
        DenseIndex.build(["text"], encoder=HashingEncoder(), **kwargs)


def test_bad_ef_search_setting() -> None:
    index = DenseIndex.from_vectors(VECTORS)
    with pytest.raises(ValueError, match="ef_search must be an int >= 1"):
        index.ef_search = 0
    assert index.ef_search == DEFAULT_EF_SEARCH[None]


@pytest.mark.parametrize(
    "vectors, kwargs, error, message",
    [
        (
            np.empty((0, 8)),
            {},
            ValueError,
            r"vectors have shape \(0, 8\); give at least one vector",
        ),
        (
            np.empty((3, 0)),
            {},
            ValueError,
            r"vectors have shape \(3, 0\); give vectors of dimension >= 1",
        ),
        ([], {}, ValueError, r"vectors have shape \(1, 0\)"),
        (np.array([[1.0, np.nan]]), {}, ValueError, "vectors row 0 holds NaN"),
        (np.array([[1.0, 2.0], [0.0, 0.0]]), {}, ValueError, "vectors row 1 is all zeros"),
        (np.array([["x", "y"]]), {}, TypeError, "vectors must be numeric"),
        ([[1.0, 2.0], [3.0]], {}, TypeError, "numpy cannot read it"),
        (np.ones((2, 3)), {"ids": ["a"]}, ValueError, "ids has 1 entries for 2 vectors"),
        (np.ones((2, 3)), {"ids": ["a", 2]}, TypeError, r"ids\[1\] is int, expected str"),
        (np.ones((2, 3)), {"ids": "ab"}, TypeError, "ids must be a sequence of str, got str"),
        (np.ones((2, 3)), {"ids": ["a", "a"]}, ValueError, "duplicate document '_id' 'a'"),
    ],
)
def test_bad_vectors(vectors, kwargs, error, message) -> None:
    with pytest.raises(error, match=message):
        DenseIndex.from_vectors(vectors, **kwargs)


def test_zero_vector_is_fine_under_inner_product() -> None:
    index = DenseIndex.from_vectors(np.array([[0.0, 0.0], [1.0, 0.0]]), metric="ip")
    assert index.search([1.0, 0.0], 2).ids.tolist() == [[1, 0]]


@pytest.mark.parametrize(
    "vectors, message",
    [
        (np.ones((2, 15)), "vectors have dimension 15, the index's vectors 16"),
        (np.array([[np.inf] * 16]), "vectors row 0 holds NaN"),
        (np.zeros((1, 16)), "vectors row 0 is all zeros"),
    ],
)
def test_bad_vectors_to_add(vectors, message) -> None:
    index = DenseIndex.from_vectors(VECTORS)
    with pytest.raises(ValueError, match=message):
        index.add(vectors)
    assert len(index) == 300


@pytest.mark.parametrize("corpus", [[], iter([]), ()], ids=["list", "generator", "tuple"])
def test_empty_corpus(corpus) -> None:
    with pytest.raises(ValueError, match="corpus is empty"):
        DenseIndex.build(corpus, encoder=HashingEncoder())


@pytest.mark.parametrize(
    "corpus, error, message",
    [
        ("one string", TypeError, "wrap it in a list"),
        (["fine", 5], TypeError, "document 1 is int; expected str or a dict"),
        ([{"title": "no text"}], ValueError, "document 0 has no 'text' field"),
        ([{"text": "x", "_id": True}], TypeError, "document 0 field '_id' is bool"),
        (
            [{"text": "a", "_id": "d"}, {"text": "b", "_id": "d"}],
            ValueError,
            "duplicate document '_id' 'd'",
        ),
        ([{"text": "a", "_id": "d"}, {"text": "b"}], ValueError, "document 1 has no '_id'"),
    ],
)
def test_bad_documents(corpus, error, message) -> None:
    with pytest.raises(error, match=message):
        DenseIndex.build(corpus, encoder=HashingEncoder())
