"""Every entry point that takes texts reads a batch the same way (``checks.check_queries``):
a str, a list or tuple of str, or a 1-d numpy array of str gives the same result; and every
retriever gives a blank query of a batch an empty row, without encoding it."""

from __future__ import annotations

import numpy as np
import pytest
from dense_oracle import HashingEncoder, knn
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


# -- blank queries: an empty row each, the others as if searched alone ----------------------

BATCH = ["cat on the mat", "", "river stone", " \t\u3000", "snow and wind fire"]
ASKED = [0, 2, 4]
BLANK = [1, 3]


def assert_blank_rows_empty(result: SearchResult, alone: SearchResult) -> None:
    assert np.all(result.ids[BLANK] == -1) and np.all(result.scores[BLANK] == -np.inf)
    assert_same(SearchResult(result.ids[ASKED], result.scores[ASKED]), alone)


class RecordingEncoder(HashingEncoder):
    """A ``HashingEncoder`` that keeps every text it was asked to encode."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def encode(self, texts, *, batch_size: int = 32, show_progress: bool = False) -> np.ndarray:
        self.texts.extend(texts)
        return super().encode(texts, batch_size=batch_size, show_progress=show_progress)


class RecordingSparseEncoder(HashingSparseEncoder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def encode(self, texts, *, show_progress: bool = False):
        self.texts.extend(texts)
        return super().encode(texts, show_progress=show_progress)


def test_dense_blank_queries_get_empty_rows() -> None:
    encoder = RecordingEncoder()
    index = DenseIndex.build(CORPUS, encoder=encoder)
    encoder.texts.clear()
    result = index.search(BATCH, 5)
    assert encoder.texts == [BATCH[i] for i in ASKED]  # blank queries are never encoded
    alone = index.search([BATCH[i] for i in ASKED], 5)
    assert_blank_rows_empty(result, alone)
    ids, scores = knn(
        HashingEncoder().encode(CORPUS),
        HashingEncoder().encode([BATCH[i] for i in ASKED]),
        5,
        "cosine",
    )
    np.testing.assert_array_equal(alone.ids, ids)
    np.testing.assert_allclose(alone.scores, scores, rtol=1e-6)
    assert (index.search(["", " "], 3).ids == -1).all()


def test_splade_blank_queries_get_empty_rows() -> None:
    encoder = RecordingSparseEncoder()
    index = SpladeIndex.build(CORPUS, encoder=encoder)
    encoder.texts.clear()
    result = index.search(BATCH, 5)
    assert encoder.texts == [BATCH[i] for i in ASKED]
    assert_blank_rows_empty(result, index.search([BATCH[i] for i in ASKED], 5))
    assert (index.search([""], 3).ids == -1).all()


class LengthScorer:
    """A stand-in cross-encoder (no validation record): scores a pair by the passage's
    length; refuses a blank query, as ``CrossEncoder.score`` does."""

    name = "length-scorer"
    training = None

    def score(self, queries, passages) -> np.ndarray:
        check_texts(queries, "query")
        return np.array([len(p) for p in passages], np.float32)


def test_hybrid_blank_queries_get_empty_rows_through_every_stage() -> None:
    engine = HybridIndex.build(
        CORPUS,
        retrievers=("bm25", "dense", "splade"),
        encoder=RecordingEncoder(),
        splade_encoder=RecordingSparseEncoder(),
    ).with_reranker(LengthScorer())  # type: ignore[arg-type]
    asked = [BATCH[i] for i in ASKED]
    for options in ({}, {"mmr": 0.5}, {"rerank": 10}, {"rerank": 10, "mmr": 0.7}):
        result = engine.search(BATCH, 6, **options)
        assert_blank_rows_empty(result, engine.search(asked, 6, **options))
    assert (engine.search(["", "  "], 4, rerank=5, mmr=0.5).ids == -1).all()
