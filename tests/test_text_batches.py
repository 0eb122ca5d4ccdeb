"""Every entry point that takes texts reads a batch the same way (``checks.check_queries``):
a str, a list or tuple of str, or a 1-d numpy array of str gives the same result."""

from __future__ import annotations

import numpy as np
import pytest
from dense_oracle import HashingEncoder
from sparse_oracle import HashingSparseEncoder

from hybrid_engine import BM25Index, DenseIndex, HybridIndex, SearchResult, SpladeIndex, rerank
from hybrid_engine.checks import check_queries, check_texts, is_text_batch

WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()
CORPUS = [" ".join(WORDS[(i * 7 + j) % 15] for j in range(4)) for i in range(30)]
QUERIES = ["cat on the mat", "river stone", "snow and wind fire"]
ARRAYS = [np.array(QUERIES), np.array(QUERIES, dtype=object), tuple(QUERIES)]


def assert_same(got: SearchResult, expected: SearchResult) -> None:
    np.testing.assert_array_equal(got.ids, expected.ids)
    np.testing.assert_array_equal(got.scores, expected.scores)


# -- the one reader -------------------------------------------------------------------------


@pytest.mark.parametrize("batch", [*ARRAYS, QUERIES])
def test_check_queries_reads_every_form_as_a_list_of_str(batch) -> None:
    got = check_queries(batch)
    assert got == QUERIES and all(type(text) is str for text in got)
    assert is_text_batch(batch)


def test_check_queries_single_str_and_blank() -> None:
    assert check_queries("one") == ["one"]
    assert check_queries(["a", " ", ""]) == ["a", " ", ""]  # blank kept
    assert check_queries(np.array([], dtype=str)) == []
    with pytest.raises(ValueError, match="text 1 is empty or whitespace only"):
        check_texts(np.array(["a", "  "]))


@pytest.mark.parametrize(
    ("batch", "match"),
    [
        (np.array([["a", "b"]]), r"must be 1-d of dtype str .*shape \(1, 2\)"),
        (np.array([1.0, 2.0]), "must be 1-d of dtype str.*float64"),
        (np.array(["a", 3], dtype=object), "query 1 is int, expected str"),
        ({"a"}, "expected query texts as a str, a sequence of str or a 1-d numpy array"),
        (b"ab", "got bytes"),
        (None, "got NoneType"),
    ],
)
def test_check_queries_refuses_what_is_not_text(batch, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        check_queries(batch)


@pytest.mark.parametrize(
    "batch", [np.ones((2, 4)), np.array([["a"]]), [[1.0, 2.0]], [], np.array(5.0)]
)
def test_vectors_are_not_text_batches(batch) -> None:
    assert not is_text_batch(batch)


# -- each entry point -----------------------------------------------------------------------


@pytest.mark.parametrize("batch", ARRAYS)
def test_bm25_search(batch) -> None:
    index = BM25Index.build(CORPUS)
    assert_same(index.search(batch, 5), index.search(QUERIES, 5))


@pytest.mark.parametrize("batch", ARRAYS)
def test_dense_search_text_queries(batch) -> None:
    index = DenseIndex.build(CORPUS, encoder=HashingEncoder())
    assert_same(index.search(batch, 5), index.search(QUERIES, 5))


@pytest.mark.parametrize("batch", ARRAYS)
def test_splade_search(batch) -> None:
    index = SpladeIndex.build(CORPUS, encoder=HashingSparseEncoder())
    assert_same(index.search(batch, 5), index.search(QUERIES, 5))


@pytest.mark.parametrize("batch", ARRAYS)
def test_hybrid_search(batch) -> None:
    engine = HybridIndex.build(
        CORPUS,
        retrievers=("bm25", "dense", "splade"),
        encoder=HashingEncoder(),
        splade_encoder=HashingSparseEncoder(),
    )
    assert_same(engine.search(batch, 5, mmr=0.5), engine.search(QUERIES, 5, mmr=0.5))


class TableScorer:
    """Scores a pair by the length of the passage minus the query's; records the pairs."""

    def __init__(self) -> None:
        self.pairs: list[tuple[str, str]] = []

    def score(self, queries, passages) -> np.ndarray:
        self.pairs.extend(zip(queries, passages))
        return np.array([len(p) - len(q) for q, p in zip(queries, passages)], np.float32)


def test_rerank_queries_and_doc_texts() -> None:
    ids = np.array([[3, 1, 4], [0, 2, -1], [5, -1, -1]], np.int64)
    fused = SearchResult(ids, np.where(ids >= 0, 1.0, -np.inf).astype(np.float32))
    docs = ["a", "bbbb", "cc", "ddd", "e", "ffffff"]
    expected = rerank(fused, QUERIES, docs, TableScorer())
    scorer = TableScorer()
    assert_same(rerank(fused, np.array(QUERIES), np.array(docs), scorer), expected)
    assert all(type(q) is str and type(p) is str for q, p in scorer.pairs)


def test_encoder_encode(encoder) -> None:
    np.testing.assert_array_equal(encoder.encode(np.array(QUERIES)), encoder.encode(QUERIES))


def test_splade_encoder_encode(splade_encoder) -> None:
    got, expected = splade_encoder.encode(np.array(QUERIES)), splade_encoder.encode(QUERIES)
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a, b)


def test_cross_encoder_score(cross_encoder_path) -> None:
    from hybrid_engine.models.cross_encoder import CrossEncoder

    model = CrossEncoder.load(cross_encoder_path, max_length=64)
    passages = ["the cat sat on the mat", "stones in the river", "a fire in the snow"]
    expected = model.score(QUERIES, passages)
    np.testing.assert_array_equal(model.score(np.array(QUERIES), np.array(passages)), expected)
    np.testing.assert_array_equal(
        model.score("cat on the mat", np.array(passages, dtype=object)),
        model.score(["cat on the mat"] * 3, passages),
    )
