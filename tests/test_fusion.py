"""``fuse`` against a plain-Python oracle (dicts and loops), hand-computed examples and errors."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_engine import SearchResult, fuse
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD, METHODS

Row = list[tuple[int, float]]  # (position, score) hits of one query, best first


def _float32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def _normalised(hits: Row, method: str, rrf_k: int) -> tuple[dict[int, float], float]:
    """One list's value of each hit and of a candidate it lacks."""
    if method == "rrf":
        return {doc: 1.0 / (rrf_k + rank) for rank, (doc, _) in enumerate(hits, 1)}, 0.0
    if not hits:
        return {}, 0.0
    scores = [s for _, s in hits]
    n = len(scores)
    mean = sum(scores) / n
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / (n - 1)) if n > 1 else 0.0
    values = {}
    for doc, s in hits:
        if method == "zscore":
            values[doc] = (s - mean) / std if std > 0 else 0.0
        elif method == "dbsf":
            low, high = mean - 3 * std, mean + 3 * std
            values[doc] = (s - low) / (high - low) if std > 0 else 0.5
        else:  # min-max: minmax, combsum, combmnz
            low, high = min(scores), max(scores)
            values[doc] = (s - low) / (high - low) if high > low else 0.5
    return values, 0.0 if method == "dbsf" else min(values.values())


def oracle(
    rows: list[Row],
    k: int,
    method: str,
    weights: list[float] | None = None,
    rrf_k: int = 60,
    depth: int | None = None,
) -> list[tuple[int, float]]:
    """Fused (position, float32 score) ranking of one query, from its row in each list."""
    w = list(weights) if weights is not None else [1.0] * len(rows)
    if method in ("minmax", "zscore", "dbsf"):
        w = [x / sum(w) for x in w]
    per_list = [_normalised(row[:depth], method, rrf_k) for row in rows]
    candidates = {doc for values, _ in per_list for doc in values}
    fused = {}
    for doc in candidates:
        total = 0.0
        for weight, (values, missing) in zip(w, per_list, strict=True):
            total += weight * values.get(doc, missing)
        if method == "combmnz":
            total *= sum(doc in values for values, _ in per_list)
        fused[doc] = _float32(total)
    return sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]


def result_of(rows_per_query: list[Row], width: int) -> SearchResult:
    """A SearchResult holding the given rows, padded to ``width``."""
    out = SearchResult.empty(len(rows_per_query), width)
    for q, row in enumerate(rows_per_query):
        for j, (doc, score) in enumerate(row):
            out.ids[q, j], out.scores[q, j] = doc, score
    return out


def rows_of(result: SearchResult) -> list[Row]:
    return [
        [(int(i), float(s)) for i, s in zip(ids, scores, strict=True) if i >= 0]
        for ids, scores in zip(result.ids, result.scores, strict=True)
    ]


def assert_matches(
    fused: SearchResult, expected: list[list[tuple[int, float]]], width: int
) -> None:
    """``fused`` equals the oracle rankings in ``width`` columns; ids may differ only among
    scores equal to 1e-5."""
    assert fused.ids.shape == fused.scores.shape == (len(expected), width)
    assert fused.ids.dtype == np.int64 and fused.scores.dtype == np.float32
    for q, want in enumerate(expected):
        got = rows_of(fused)[q]
        assert len(got) == len(want)
        assert (fused.ids[q, len(want) :] == -1).all()
        assert np.isneginf(fused.scores[q, len(want) :]).all()
        want_scores = dict(want)
        for j, ((doc, score), (want_doc, want_score)) in enumerate(zip(got, want, strict=True)):
            assert score == pytest.approx(want_score, rel=1e-5, abs=1e-6)
            tied = [s for _, s in want[max(j - 1, 0) : j + 2] if abs(s - want_score) <= 1e-5]
            if len(tied) == 1:
                assert doc == want_doc
            elif doc in want_scores:
                assert want_scores[doc] == pytest.approx(score, rel=1e-5, abs=1e-6)


def fuse_and_check(results: list[SearchResult], k: int, **options) -> SearchResult:  # type: ignore[no-untyped-def]
    per_query = zip(*(rows_of(r) for r in results), strict=True)
    expected = [oracle(list(rows), k, **options) for rows in per_query]
    fused = fuse(results, k, **options)
    columns = sum(r.ids[:, : options.get("depth")].shape[1] for r in results)
    assert_matches(fused, expected, min(k, columns))  # no wider than the candidates given
    return fused


# -- hand-computed examples ------------------------------------------------------------------

A = result_of([[(3, 5.0), (1, 4.0), (2, 4.0)]], 4)  # one padding column
B = result_of([[(1, 0.9), (7, 0.1)]], 2)


def test_rrf_by_hand() -> None:
    fused = fuse([A, B], 5, method="rrf")
    assert fused.ids.tolist() == [[1, 3, 7, 2, -1]]
    expected = [1 / 62 + 1 / 61, 1 / 61, 1 / 62, 1 / 63, -math.inf]
    np.testing.assert_allclose(fused.scores[0], np.float32(expected), rtol=1e-6)


def test_weighted_rrf_and_rrf_k_by_hand() -> None:
    fused = fuse([A, B], 4, method="rrf", weights=[3.0, 1.0], rrf_k=0)
    # 3: 3/1, 1: 3/2 + 1/1, 2: 3/3, 7: 1/2
    assert fused.ids.tolist() == [[3, 1, 2, 7]]
    np.testing.assert_allclose(fused.scores[0], [3.0, 2.5, 1.0, 0.5])


def test_minmax_by_hand_ties_by_ascending_position() -> None:
    fused = fuse([A, B], 5, method="minmax")
    # A: 3 -> 1, 1 -> 0, 2 -> 0; B: 1 -> 1, 7 -> 0 (missing: each list's minimum, 0)
    assert fused.ids.tolist() == [[1, 3, 2, 7, -1]]
    assert fused.scores.tolist() == [[0.5, 0.5, 0.0, 0.0, -math.inf]]


def test_combsum_and_combmnz_by_hand() -> None:
    assert fuse([A, B], 4, method="combsum").scores.tolist() == [[1.0, 1.0, 0.0, 0.0]]
    fused = fuse([A, B], 4, method="combmnz")
    assert fused.ids.tolist() == [[1, 3, 2, 7]]
    assert fused.scores.tolist() == [[2.0, 1.0, 0.0, 0.0]]


def test_zscore_and_dbsf_by_hand() -> None:
    one = result_of([[(4, 3.0), (8, 2.0), (6, 1.0)]], 3)  # mean 2, sample std 1
    np.testing.assert_allclose(fuse([one], 3, method="zscore").scores, [[1.0, 0.0, -1.0]])
    # Qdrant's bounds mean -/+ 3 std = -1 and 5
    dbsf = fuse([one], 3, method="dbsf")
    assert dbsf.ids.tolist() == [[4, 8, 6]]
    np.testing.assert_allclose(dbsf.scores, [[4 / 6, 3 / 6, 2 / 6]], rtol=1e-6)


def test_dbsf_missing_document_adds_nothing_as_in_qdrant() -> None:
    one = result_of([[(4, 3.0), (8, 2.0), (6, 1.0)]], 3)  # 4/6, 3/6, 2/6
    other = result_of([[(9, 1.0)]], 1)  # one hit: 0.5
    fused = fuse([one, other], 4, method="dbsf")
    assert fused.ids.tolist() == [[4, 8, 9, 6]]  # 8 and 9 tie at 0.25: ascending position
    np.testing.assert_allclose(fused.scores, [[4 / 12, 0.25, 0.25, 2 / 12]], rtol=1e-6)


def test_minmax_missing_document_gets_the_list_minimum() -> None:
    one = result_of([[(4, 3.0), (8, 2.0)]], 2)
    other = result_of([[(9, 7.0), (8, 5.0)]], 2)
    fused = fuse([one, other], 3, method="minmax")
    # 4: (1 + 0) / 2 (missing from other: its minimum, 0); 9: (0 + 1) / 2; 8: (0 + 0) / 2
    assert fused.ids.tolist() == [[4, 9, 8]]
    assert fused.scores.tolist() == [[0.5, 0.5, 0.0]]


@pytest.mark.parametrize("method", METHODS)
def test_all_padding_row_contributes_nothing(method: str) -> None:
    a = result_of([[(5, 2.0), (2, 1.0)], [(0, 1.0)]], 3)
    empty = SearchResult.empty(2, 4)
    alone = fuse([a], 3, method=method)
    fused = fuse([a, empty], 3, method=method)
    assert fused.ids.tolist() == alone.ids.tolist() == [[5, 2, -1], [0, -1, -1]]


def test_no_candidates_at_all() -> None:
    fused = fuse([SearchResult.empty(2, 3), SearchResult.empty(2, 0)], 4)
    assert fused.ids.tolist() == [[-1] * 3] * 2  # no wider than the 3 columns given
    assert np.isneginf(fused.scores).all()


def test_zero_queries() -> None:
    fused = fuse([SearchResult.empty(0, 3), SearchResult.empty(0, 5)], 2)
    assert fused.ids.shape == (0, 2)


def test_depth_keeps_only_the_top_of_each_list() -> None:
    fused = fuse([A, B], 5, method="rrf", depth=1)
    assert fused.ids.tolist() == [[1, 3]]  # two candidates: two columns


def test_default_method_is_documented_and_known() -> None:
    assert DEFAULT_METHOD in METHODS
    assert DEFAULT_METHOD in (fuse.__doc__ or "")


def test_accepts_other_integer_and_float_dtypes() -> None:
    narrow = SearchResult(A.ids.astype(np.int32), A.scores.astype(np.float64))
    assert fuse([narrow, B], 5).ids.tolist() == fuse([A, B], 5).ids.tolist()


def test_a_large_batch() -> None:
    """300 queries x 2 lists x 100 candidates (the hybrid path's shape) match the oracle."""
    rng = np.random.default_rng(0)
    results = []
    for _ in range(2):
        ids = np.stack([rng.choice(1000, 100, replace=False) for _ in range(300)])
        scores = -np.sort(-rng.random((300, 100)), axis=1).astype(np.float32)
        results.append(SearchResult(ids.astype(np.int64), scores))
    for method in METHODS:
        fuse_and_check(results, 100, method=method)


# -- properties --------------------------------------------------------------------------------


@st.composite
def batches(draw: st.DrawFn) -> list[SearchResult]:
    """1-3 results of the same 1-3 queries, widths 0-8, positions 0-11, tied scores common."""
    n_queries = draw(st.integers(1, 3))
    score = st.one_of(
        st.integers(-3, 3).map(float),
        st.floats(-50, 50, allow_nan=False, width=32),
    )
    results = []
    for _ in range(draw(st.integers(1, 3))):
        width = draw(st.integers(0, 8))
        rows = []
        for _ in range(n_queries):
            docs = draw(st.lists(st.integers(0, 11), unique=True, max_size=width))
            scores = sorted((draw(score) for _ in docs), reverse=True)
            rows.append(list(zip(docs, scores, strict=True)))
        results.append(result_of(rows, width))
    return results


@settings(max_examples=200, deadline=None)
@given(
    results=batches(),
    k=st.integers(1, 12),
    method=st.sampled_from(METHODS),
    depth=st.one_of(st.none(), st.integers(1, 9)),
    rrf_k=st.integers(0, 100),
    data=st.data(),
)
def test_matches_oracle(
    results: list[SearchResult],
    k: int,
    method: str,
    depth: int | None,
    rrf_k: int,
    data: st.DataObject,
) -> None:
    weights = data.draw(
        st.one_of(
            st.none(),
            st.lists(st.floats(0, 5), min_size=len(results), max_size=len(results)).filter(
                lambda w: sum(w) > 0
            ),
        )
    )
    fused = fuse_and_check(results, k, method=method, weights=weights, rrf_k=rrf_k, depth=depth)
    # the ordering contract of every retriever
    for ids, scores in zip(fused.ids, fused.scores, strict=True):
        hits = ids >= 0
        assert hits.all() or not hits[hits.argmin() :].any()  # padding only at the end
        assert np.isfinite(scores[hits]).all() and np.isneginf(scores[~hits]).all()
        assert len(set(ids[hits].tolist())) == hits.sum()
        pairs = list(zip(-scores[hits], ids[hits], strict=True))
        assert pairs == sorted(pairs)


@settings(max_examples=100, deadline=None)
@given(results=batches(), method=st.sampled_from(METHODS))
def test_list_order_does_not_matter_with_equal_weights(
    results: list[SearchResult], method: str
) -> None:
    forward = fuse(results, 12, method=method)
    backward = fuse(results[::-1], 12, method=method)
    np.testing.assert_allclose(forward.scores, backward.scores, rtol=1e-5, atol=1e-6)


@settings(max_examples=100, deadline=None)
@given(results=batches(), method=st.sampled_from(METHODS))
def test_fusing_a_ranking_with_itself_keeps_its_candidates(
    results: list[SearchResult], method: str
) -> None:
    single = results[0]
    fused = fuse([single, single], max(single.ids.shape[1], 1), method=method)
    for got, want in zip(fused.ids, single.ids, strict=True):
        assert sorted(got[got >= 0].tolist()) == sorted(want[want >= 0].tolist())


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("results", "options", "error", "match"),
    [
        ([], {}, ValueError, "non-empty sequence of SearchResult"),
        (A, {}, ValueError, "non-empty sequence of SearchResult"),
        ([A, "ranking"], {}, TypeError, r"results\[1\] is str, expected a SearchResult"),
        (
            [A, SearchResult(B.ids.astype(np.float64), B.scores)],
            {},
            TypeError,
            r"results\[1\].ids has dtype float64",
        ),
        ([A, SearchResult.empty(2, 2)], {}, ValueError, "has 2 queries but results"),
        (
            [SearchResult(np.array([[-2]]), np.array([[1.0]], np.float32))],
            {},
            ValueError,
            "below -1",
        ),
        (
            [SearchResult(np.array([[4, 4]]), np.array([[2.0, 1.0]], np.float32))],
            {},
            ValueError,
            "repeats a position",
        ),
        (
            [SearchResult(np.array([[4, 5]]), np.array([[np.nan, 1.0]], np.float32))],
            {},
            ValueError,
            "NaN or infinite score",
        ),
        ([A, B], {"method": "borda"}, ValueError, "unknown fusion method 'borda'.*'rrf'"),
        ([A, B], {"weights": [1.0]}, ValueError, r"one number per result \(2\)"),
        ([A, B], {"weights": [1.0, -1.0]}, ValueError, "finite, >= 0 and not all 0"),
        ([A, B], {"weights": [1.0, math.nan]}, ValueError, "finite, >= 0 and not all 0"),
        ([A, B], {"weights": [math.inf, 1.0]}, ValueError, "finite, >= 0 and not all 0"),
        ([A, B], {"weights": [0.0, 0.0]}, ValueError, "finite, >= 0 and not all 0"),
        ([A, B], {"k": 0}, ValueError, "k must be an int >= 1, got 0"),
        ([A, B], {"k": True}, ValueError, "k must be an int >= 1, got True"),
        ([A, B], {"k": 2.0}, ValueError, "k must be an int >= 1"),
        ([A, B], {"depth": 0}, ValueError, "depth must be an int >= 1"),
        ([A, B], {"rrf_k": -1}, ValueError, "rrf_k must be an int >= 0"),
    ],
)
def test_errors(results, options, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        fuse(results, **options)
