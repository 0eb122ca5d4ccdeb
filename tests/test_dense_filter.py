"""DenseIndex.search(allowed=mask): a brute-force oracle over the allowed vectors is the
reference. The exact paths equal it (ids, scores, tie order); the oversampled graph reaches
recall@10 >= 0.95 at every selectivity; masked documents never come back; a row has
min(k, n_allowed) hits; boundaries (no, one, exactly k, fewer than k allowed), batches, text
queries with blanks, threads and bad masks."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from dense_oracle import HashingEncoder, brute_force, knn

from hybrid_engine import DenseIndex, SearchResult
from hybrid_engine.dense import _kernels, filtered
from hybrid_engine.dense import knn as knn_module
from hybrid_engine.dense.candidates import Candidates

K = 10
RNG = np.random.default_rng(0)
N, DIM = 3000, 384
VECTORS = RNG.standard_normal((N, DIM)).astype(np.float32)
QUERIES = RNG.standard_normal((100, DIM)).astype(np.float32)
SMALL = RNG.standard_normal((400, 16)).astype(np.float32)
SMALL_QUERIES = RNG.standard_normal((20, 16)).astype(np.float32)


def exact_oracle(
    vectors: np.ndarray, queries: np.ndarray, allowed: np.ndarray, k: int, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """(ids, scores) of ``dense_oracle.knn`` over the allowed vectors alone, ids mapped back
    to positions: what every exact path must return, bit for bit."""
    rows = np.flatnonzero(allowed)
    ids, scores = knn(vectors[rows], queries, k, metric)
    return np.where(ids >= 0, rows[np.maximum(ids, 0)], -1), scores


def assert_filtered_rows(result: SearchResult, allowed: np.ndarray, k: int) -> None:
    """min(k, n_allowed) hits per row, all allowed, distinct, sorted; padding after them."""
    n_hits = min(k, int(allowed.sum()))
    for ids, scores in zip(result.ids, result.scores, strict=True):
        assert (ids[:n_hits] >= 0).all() and (ids[n_hits:] == -1).all()
        assert np.all(scores[n_hits:] == -np.inf) and np.isfinite(scores[:n_hits]).all()
        assert allowed[ids[:n_hits]].all()
        assert len(set(ids[:n_hits])) == n_hits
        pairs = list(zip(-scores[:n_hits], ids[:n_hits], strict=True))
        assert pairs == sorted(pairs)


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean over rows of |found ∩ truth| / |truth| (padding ignored)."""
    return float(
        np.mean(
            [len(set(f[f >= 0]) & set(t[t >= 0])) / (t >= 0).sum() for f, t in zip(found, truth)]
        )
    )


def mask(n: int, selectivity: float, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(n) < selectivity


@pytest.fixture(scope="module")
def graph_index() -> DenseIndex:
    index = DenseIndex.from_vectors(VECTORS, exact_threshold=100, num_threads=1)
    assert index.uses_graph
    return index


@pytest.fixture
def graph_forced() -> Iterator[None]:
    """The cost model off: the oversampled graph whenever a list shorter than the index can
    hold k allowed hits."""
    patch = pytest.MonkeyPatch()
    patch.setattr(filtered, "GRAPH_ROWS_PER_LINK", 0.0)
    yield
    patch.undo()


# --- recall and hits ----------------------------------------------------------------------


@pytest.mark.parametrize("selectivity", [0.001, 0.01, 0.1, 0.5])
@pytest.mark.parametrize("forced", [False, True], ids=["cost-model", "graph-forced"])
def test_recall_and_hits_at_each_selectivity(
    graph_index: DenseIndex, selectivity: float, forced: bool, monkeypatch
) -> None:
    if forced:
        monkeypatch.setattr(filtered, "GRAPH_ROWS_PER_LINK", 0.0)
    allowed = mask(N, selectivity, seed=int(selectivity * 1000))
    result = graph_index.search(QUERIES, K, allowed=allowed)
    assert_filtered_rows(result, allowed, K)
    assert recall(result.ids, brute_force(VECTORS, QUERIES, allowed, K)) >= 0.95


def test_the_forced_graph_path_is_the_graph(graph_index: DenseIndex, graph_forced) -> None:
    # At 50%, the plan's list (39) is far shorter than the index: the graph answers.
    assert filtered.plan(K, N // 2, N, graph_index.ef_search, graph_index.m) == 39
    allowed = mask(N, 0.5, seed=3)
    found = graph_index.search(QUERIES, K, allowed=allowed)
    exact = graph_index.search(QUERIES, K, allowed=allowed, exact=True)
    assert not np.array_equal(found.ids, exact.ids)  # some approximation shows
    np.testing.assert_array_equal(exact.ids, brute_force(VECTORS, QUERIES, allowed, K))


def test_every_returned_score_is_exact(graph_index: DenseIndex, graph_forced) -> None:
    allowed = mask(N, 0.3, seed=4)
    result = graph_index.search(QUERIES[:5], K, allowed=allowed)
    for ids, scores, query in zip(result.ids, result.scores, QUERIES[:5], strict=True):
        # The oracle's scores of the returned documents, in its (descending) order.
        np.testing.assert_array_equal(scores, knn(VECTORS[ids], query[None], K, "cosine")[1][0])


def test_a_mask_avoiding_the_neighbourhood_falls_back_to_exact(
    graph_index: DenseIndex, graph_forced
) -> None:
    # Allowed: the 40% of documents farthest from the first query, so its graph candidates
    # (the nearest) are all masked and it is searched exactly over the allowed rows; the
    # second query, its opposite, has allowed neighbours and keeps its graph answer.
    queries = np.stack([QUERIES[0], -QUERIES[0]])
    scores = VECTORS @ queries[0]
    allowed = scores <= np.quantile(scores, 0.4)
    size = filtered.plan(K, int(allowed.sum()), N, graph_index.ef_search, graph_index.m)
    assert size is not None and not allowed[graph_index.search(queries[0], size).ids].any()
    result = graph_index.search(queries, K, allowed=allowed)
    truth = brute_force(VECTORS, queries, allowed, K)
    np.testing.assert_array_equal(result.ids[0], truth[0])
    assert recall(result.ids[1:], truth[1:]) >= 0.9
    assert_filtered_rows(result, allowed, K)


# --- the exact paths equal the oracle -------------------------------------------------------


@pytest.mark.parametrize("metric", ["cosine", "ip"])
@pytest.mark.parametrize("n_queries", [1, 5, 20])  # 16 or more: BLAS product over the rows
def test_mask_on_an_exact_index_equals_the_oracle(metric: str, n_queries: int) -> None:
    index = DenseIndex.from_vectors(SMALL, metric=metric)
    assert not index.uses_graph
    allowed = mask(len(SMALL), 0.3, seed=n_queries)
    result = index.search(SMALL_QUERIES[:n_queries], 7, allowed=allowed)
    ids, scores = exact_oracle(SMALL, SMALL_QUERIES[:n_queries], allowed, 7, metric)
    np.testing.assert_array_equal(result.ids, ids)
    np.testing.assert_array_equal(result.scores, scores)


def test_a_batch_in_chunks_equals_the_oracle(monkeypatch) -> None:
    # Chunks of 7 queries (the last of 6) all score the allowed rows gathered once.
    allowed = mask(len(SMALL), 0.3, seed=8)
    monkeypatch.setattr(knn_module, "_SCORES_PER_CHUNK", 7 * int(allowed.sum()))
    index = DenseIndex.from_vectors(SMALL)
    result = index.search(SMALL_QUERIES, 5, allowed=allowed)
    ids, scores = exact_oracle(SMALL, SMALL_QUERIES, allowed, 5, "cosine")
    np.testing.assert_array_equal(result.ids, ids)
    np.testing.assert_array_equal(result.scores, scores)


@pytest.mark.parametrize("n_queries", [3, 20])
def test_exact_flag_on_a_graph_index_equals_the_oracle(n_queries: int) -> None:
    index = DenseIndex.from_vectors(SMALL, exact_threshold=50, num_threads=1)
    allowed = mask(len(SMALL), 0.6, seed=1)
    result = index.search(SMALL_QUERIES[:n_queries], 9, exact=True, allowed=allowed)
    ids, scores = exact_oracle(SMALL, SMALL_QUERIES[:n_queries], allowed, 9, "cosine")
    np.testing.assert_array_equal(result.ids, ids)
    np.testing.assert_array_equal(result.scores, scores)


def test_ties_keep_ascending_positions_under_a_mask() -> None:
    # Each of 20 vectors appears 5 times: every score is a tie, broken by position.
    base = RNG.standard_normal((20, 8)).astype(np.float32)
    vectors = base[RNG.permutation(np.repeat(np.arange(20), 5))]
    index = DenseIndex.from_vectors(vectors)
    allowed = mask(len(vectors), 0.5, seed=2)
    for k in (1, 3, 7, 40):
        result = index.search(SMALL_QUERIES[:4, :8], k, allowed=allowed)
        ids, scores = exact_oracle(vectors, SMALL_QUERIES[:4, :8], allowed, k, "cosine")
        np.testing.assert_array_equal(result.ids, ids)
        np.testing.assert_array_equal(result.scores, scores)


def test_approx_scores_rows_equals_numpy() -> None:
    rows = np.array([5, 0, 399, 17, 17], dtype=np.int64)
    out = np.empty((len(SMALL_QUERIES), len(rows)), dtype=np.float32)
    _kernels.approx_scores_rows(SMALL, rows, SMALL_QUERIES, out)
    docs, queries = SMALL[rows].astype(np.float64), SMALL_QUERIES.astype(np.float64)
    # A float32 dot product of dim terms, summed in any order, is off by <= dim 2**-24 |q| |x|.
    bound = 16 * 2.0**-24 * np.outer(np.linalg.norm(queries, axis=1), np.linalg.norm(docs, axis=1))
    assert (np.abs(out - queries @ docs.T) <= 1.01 * bound).all()


def test_a_graph_that_reaches_too_few_leaves_the_batch_to_the_exact_path() -> None:
    class Unreachable:
        def knn_query(self, data, k, num_threads):
            raise RuntimeError("Cannot return the results in a contiguous 2D array")

    assert Candidates.walked(Unreachable(), QUERIES[:3], 50, 1) is None


# --- boundaries ---------------------------------------------------------------------------


@pytest.fixture(params=["exact", "graph"])
def any_index(request, graph_index: DenseIndex) -> DenseIndex:
    if request.param == "graph":
        return graph_index
    return DenseIndex.from_vectors(VECTORS, exact_threshold=N)


def test_nothing_allowed_gives_padding(any_index: DenseIndex) -> None:
    result = any_index.search(QUERIES[:3], K, allowed=np.zeros(N, dtype=bool))
    np.testing.assert_array_equal(result.ids, SearchResult.empty(3, K).ids)
    np.testing.assert_array_equal(result.scores, SearchResult.empty(3, K).scores)


@pytest.mark.parametrize("n_allowed", [1, K - 3, K, K + 1])
def test_few_allowed_are_all_returned_in_exact_order(any_index: DenseIndex, n_allowed) -> None:
    allowed = np.zeros(N, dtype=bool)
    allowed[np.random.default_rng(n_allowed).choice(N, n_allowed, replace=False)] = True
    result = any_index.search(QUERIES[:4], K, allowed=allowed)
    assert_filtered_rows(result, allowed, K)
    np.testing.assert_array_equal(result.ids, brute_force(VECTORS, QUERIES[:4], allowed, K))


def test_everything_allowed_equals_no_mask(any_index: DenseIndex) -> None:
    free = any_index.search(QUERIES[:5], K)
    masked = any_index.search(QUERIES[:5], K, allowed=np.ones(N, dtype=bool))
    np.testing.assert_array_equal(masked.ids, free.ids)
    np.testing.assert_array_equal(masked.scores, free.scores)


def test_a_batch_equals_one_query_at_a_time(graph_index: DenseIndex, graph_forced) -> None:
    allowed = mask(N, 0.2, seed=5)
    batch = graph_index.search(QUERIES[:20], K, allowed=allowed, num_threads=2)
    for row, query in enumerate(QUERIES[:20]):
        one = graph_index.search(query, K, allowed=allowed, num_threads=1)
        np.testing.assert_array_equal(one.ids[0], batch.ids[row])
        np.testing.assert_array_equal(one.scores[0], batch.scores[row])


def test_text_queries_with_blanks_under_a_mask() -> None:
    docs = [f"doc {i} words {i % 7} topic {i % 3}" for i in range(60)]
    index = DenseIndex.build(docs, encoder=HashingEncoder())
    allowed = mask(len(docs), 0.5, seed=6)
    result = index.search(["", "words 3 topic 1", "  "], 5, allowed=allowed)
    assert (result.ids[[0, 2]] == -1).all() and (result.scores[[0, 2]] == -np.inf).all()
    vectors = index.search("words 3 topic 1", 5, allowed=allowed)
    np.testing.assert_array_equal(result.ids[1], vectors.ids[0])
    assert allowed[result.ids[1]].all()
    assert index.search([], 5, allowed=allowed).ids.shape == (0, 5)


def test_concurrent_filtered_searches_equal_sequential(graph_index: DenseIndex) -> None:
    masks = [mask(N, s, seed=i) for i, s in enumerate([0.02, 0.3, 0.7, 0.9])]
    expected = [graph_index.search(QUERIES[:10], K, allowed=m, num_threads=1) for m in masks]
    with ThreadPoolExecutor(4) as pool:
        got = list(
            pool.map(lambda m: graph_index.search(QUERIES[:10], K, allowed=m, num_threads=1), masks)
        )
    for want, have in zip(expected, got, strict=True):
        np.testing.assert_array_equal(want.ids, have.ids)
        np.testing.assert_array_equal(want.scores, have.scores)


# --- the plan -----------------------------------------------------------------------------


def test_list_size_holds_k_allowed_at_three_sigmas() -> None:
    assert filtered.list_size(10, 500, 1000) == 39
    for k, s in [(10, 0.01), (10, 0.3), (100, 0.05), (1, 0.9)]:
        size = filtered.list_size(k, int(s * 10**6), 10**6)
        mean, sd = size * s, np.sqrt(size * s * (1 - s))
        assert mean - 3 * sd >= k > (size - 1) * s - 3 * np.sqrt((size - 1) * s * (1 - s))
    assert filtered.list_size(10, 3, 1000) == 1000  # capped at the index size


def test_plan_prefers_exact_for_few_allowed() -> None:
    # 100,000 documents, ef_search 256, m 16: the graph costs 0.5 * 256 * 32 = 4,096 rows.
    assert filtered.plan(10, 4_000, 100_000, 256, 16) is None
    assert filtered.plan(10, 50_000, 100_000, 256, 16) == 39
    assert filtered.plan(10, 10, 100_000, 256, 16) is None  # no more allowed than k


# --- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "allowed, error, words",
    [
        ([True] * 400, TypeError, "numpy bool array"),
        (np.ones(400, dtype=np.int8), TypeError, "dtype bool"),
        (np.ones(400, dtype=np.float64), TypeError, "dtype bool"),
        (np.ones(399, dtype=bool), ValueError, "shape (400,)"),
        (np.ones((400, 1), dtype=bool), ValueError, "one entry per document"),
    ],
)
def test_bad_masks_are_refused(allowed, error, words: str) -> None:
    index = DenseIndex.from_vectors(SMALL)
    with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
        index.search(SMALL_QUERIES, 5, allowed=allowed)
