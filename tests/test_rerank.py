"""``rerank`` against a plain-Python oracle, with a stand-in cross-encoder (no model needed)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_engine.pipeline.rerank import rerank
from hybrid_engine.result import SearchResult

DOCS = [f"doc {i}" for i in range(40)]


class TableScorer:
    """Scores a pair by a fixed table of (query, doc) values; counts its calls."""

    def __init__(self, table: dict[tuple[str, str], float]) -> None:
        self.table = table
        self.calls = 0

    def score(self, queries, passages) -> np.ndarray:
        self.calls += 1
        return np.array([self.table[q, p] for q, p in zip(queries, passages)], np.float32)


def _oracle(ids_row, query, scorer_table, depth, blend):
    """(ids, scores) of one row, the rules of ``rerank``'s docstring written out by hand."""
    hits = [int(i) for i in ids_row if i != -1]
    head, tail = hits[:depth], hits[depth:]
    ce = {doc: float(np.float32(scorer_table[query, DOCS[doc]])) for doc in head}
    incoming = {doc: rank for rank, doc in enumerate(head, start=1)}
    by_ce = sorted(head, key=lambda doc: (-ce[doc], incoming[doc]))
    if blend is None:
        scored = [(doc, ce[doc]) for doc in by_ce]
        floor = scored[-1][1] if scored else 0.0
        scored += [(doc, floor - j) for j, doc in enumerate(tail, start=1)]
    else:
        ce_rank = {doc: rank for rank, doc in enumerate(by_ce, start=1)}
        blended = {
            doc: blend / (60 + ce_rank[doc]) + (1 - blend) / (60 + incoming[doc]) for doc in head
        }
        order = sorted(head, key=lambda doc: (-np.float32(blended[doc]), incoming[doc]))
        scored = [(doc, blended[doc]) for doc in order]
        scored += [(doc, 1 / (60 + rank)) for rank, doc in enumerate(tail, start=len(head) + 1)]
    return [doc for doc, _ in scored], [np.float32(score) for _, score in scored]


def _check_against_oracle(result, queries, table, depth, blend):
    scorer = TableScorer(table)
    out = rerank(result, queries, DOCS, scorer, depth=depth, blend=blend)
    assert scorer.calls == int((result.ids != -1).any())  # one call for every row, if any pair
    assert out.ids.shape == result.ids.shape and out.ids.dtype == np.int64
    assert out.scores.dtype == np.float32
    for row, query in enumerate(queries):
        ids, scores = _oracle(result.ids[row], query, table, depth, blend)
        n = len(ids)
        assert out.ids[row, :n].tolist() == ids
        np.testing.assert_allclose(out.scores[row, :n], scores, rtol=1e-6)
        assert (out.ids[row, n:] == -1).all() and np.isneginf(out.scores[row, n:]).all()
        assert (np.diff(out.scores[row, :n]) <= 0).all()
        if 0 < depth < n:  # the hits below depth score strictly below the reranked ones
            assert out.scores[row, depth - 1] > out.scores[row, depth]
    return out


@st.composite
def cases(draw):
    n_queries = draw(st.integers(1, 4))
    k = draw(st.integers(1, 12))
    rows, queries = [], []
    for q in range(n_queries):
        n_hits = draw(st.integers(0, k))
        hits = draw(st.permutations(range(len(DOCS))))[:n_hits]
        rows.append(list(hits) + [-1] * (k - n_hits))
        queries.append(f"query {q}")
    # Few distinct values, so that ties happen.
    values = st.sampled_from([-3.5, -1.0, 0.0, 0.25, 2.0, 7.0])
    table = {(q, d): draw(values) for q in queries for d in DOCS}
    ids = np.array(rows, np.int64)
    scores = np.where(ids == -1, -np.inf, -np.arange(k, dtype=np.float32)).astype(np.float32)
    depth = draw(st.integers(1, k + 3))
    blend = draw(st.none() | st.sampled_from([0.0, 0.3, 0.5, 1.0]))
    return SearchResult(ids, scores), queries, table, depth, blend


@settings(max_examples=200, deadline=None)
@given(cases())
def test_matches_the_oracle(case) -> None:
    _check_against_oracle(*case)


def _example():
    ids = np.array([[5, 3, 9, 1, 7], [2, 4, -1, -1, -1], [-1, -1, -1, -1, -1]], np.int64)
    result = SearchResult(ids, np.where(ids == -1, -np.inf, 1.0).astype(np.float32))
    queries = ["a", "b", "c"]
    table = {(q, d): float((hash(d) % 17) - (len(q) * 3)) for q in queries for d in DOCS}
    table["a", "doc 7"] = 100.0  # below depth 3: must stay in the tail
    return result, queries, table


@pytest.mark.parametrize("depth", [1, 3, 5, 30])
@pytest.mark.parametrize("blend", [None, 0.0, 0.5, 1.0])
def test_padding_rows_and_depths(depth, blend) -> None:
    out = _check_against_oracle(*_example(), depth, blend)
    assert (out.ids[2] == -1).all()
    if depth == 3:
        assert out.ids[0, 3:].tolist() == [1, 7]  # the tail keeps its order, whatever its score


def test_blend_zero_keeps_the_incoming_order() -> None:
    result, queries, table = _example()
    out = rerank(result, queries, DOCS, TableScorer(table), depth=5, blend=0.0)
    np.testing.assert_array_equal(out.ids, result.ids)


def test_no_hits_no_call() -> None:
    scorer = TableScorer({})
    out = rerank(SearchResult.empty(2, 3), ["a", "b"], DOCS, scorer)
    np.testing.assert_array_equal(out.ids, -1)
    assert scorer.calls == 0


def test_concurrent_calls_equal_sequential() -> None:
    result, queries, table = _example()
    scorer = TableScorer(table)
    expected = rerank(result, queries, DOCS, scorer, depth=3, blend=0.5)
    with ThreadPoolExecutor(4) as pool:
        outs = list(
            pool.map(lambda _: rerank(result, queries, DOCS, scorer, depth=3, blend=0.5), range(8))
        )
    for out in outs:
        np.testing.assert_array_equal(out.ids, expected.ids)
        np.testing.assert_array_equal(out.scores, expected.scores)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"depth": 0}, ValueError, "depth must be a positive int"),
        ({"depth": 2.5}, ValueError, "depth must be a positive int"),
        ({"blend": 1.5}, ValueError, r"blend must be None or a weight in \[0, 1\]"),
        ({"blend": -0.1}, ValueError, "blend must be"),
        ({"queries": ["a"]}, ValueError, "1 queries for a result of 3 rows"),
        ({"doc_texts": DOCS[:6]}, IndexError, "id 9, outside doc_texts of 6 texts"),
    ],
)
def test_bad_arguments(kwargs, error, match) -> None:
    result, queries, table = _example()
    arguments = {"queries": queries, "doc_texts": DOCS, **kwargs}
    with pytest.raises(error, match=match):
        rerank(
            result,
            arguments.pop("queries"),
            arguments.pop("doc_texts"),
            TableScorer(table),
            **arguments,
        )


def test_with_the_cross_encoder(cross_encoder_path) -> None:
    """The real model: each row's head ordered by its own scores of the same pairs."""
    from hybrid_engine.models.cross_encoder import CrossEncoder

    model = CrossEncoder.load(cross_encoder_path, max_length=128)
    texts = [
        "Vitamin D deficiency and multiple sclerosis risk.",
        "Cats sleep most of the day.",
        "Multiple sclerosis is a demyelinating disease.",
        "Stock markets fell.",
    ]
    ids = np.array([[0, 1, 2, 3], [3, 2, -1, -1]], np.int64)
    result = SearchResult(ids, np.where(ids == -1, -np.inf, 1.0).astype(np.float32))
    queries = ["vitamin d and ms", "finance news"]
    out = rerank(result, queries, texts, model, depth=3)
    head = model.score([queries[0]] * 3, texts[:3])
    assert out.ids[0, :3].tolist() == np.argsort(-head, kind="stable").tolist()
    assert out.ids[0, 3] == 3
    np.testing.assert_allclose(out.scores[0, :3], np.sort(head)[::-1], atol=1e-5)
