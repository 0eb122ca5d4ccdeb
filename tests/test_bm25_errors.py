"""Bad input to BM25Index gives an exception of the right type whose message names the problem;
odd but valid input (unknown words, huge or multilingual documents, NUL) just works."""

from __future__ import annotations

import numpy as np
import pytest
from bm25_checks import assert_row_invariants, compare_with_oracle, oracle_for

from hybrid_engine import Analyzer, BM25Index

CORPUS = ["the quick brown fox", "jumps over the lazy dog", "quick quick dogs", "brown bread"]


@pytest.fixture(scope="module")
def index() -> BM25Index:
    return BM25Index.build(CORPUS)


# --- the corpus ------------------------------------------------------------------------------


@pytest.mark.parametrize("corpus", [[], iter([]), ()], ids=["list", "generator", "tuple"])
def test_empty_corpus(corpus) -> None:
    with pytest.raises(ValueError, match="corpus is empty"):
        BM25Index.build(corpus)


@pytest.mark.parametrize("corpus", ["one string", {"text": "a dict"}, b"bytes"])
def test_single_document_instead_of_corpus(corpus) -> None:
    with pytest.raises(TypeError, match="wrap it in a list"):
        BM25Index.build(corpus)


@pytest.mark.parametrize(
    "corpus, error, message",
    [
        (["fine", 5], TypeError, r"document 1 is int; expected str or a dict"),
        (["fine", None], TypeError, r"document 1 is NoneType"),
        (["fine", b"bytes"], TypeError, r"document 1 is bytes"),
        ([{"title": "no text"}], ValueError, r"document 0 has no 'text' field"),
        (
            [{"text": "ok"}, {"text": "ok", "title": 7}],
            TypeError,
            r"document 1 field 'title' is int",
        ),
        ([{"text": 3.5}], TypeError, r"document 0 field 'text' is float"),
        ([{"text": "x", "_id": True}], TypeError, r"document 0 field '_id' is bool"),
        ([{"text": "x", "_id": ""}], ValueError, r"document 0 field '_id' is empty"),
        (
            [{"text": "a", "_id": "d1"}, {"text": "b", "_id": "d2"}, {"text": "c", "_id": "d1"}],
            ValueError,
            r"duplicate document '_id' 'd1'",
        ),
        (
            [{"text": "a", "_id": "d1"}, {"text": "b"}, {"text": "c", "_id": "d3"}],
            ValueError,
            r"document 1 has no '_id' while others do",
        ),
        ([{"text": "a"}, {"text": "b", "_id": "d2"}], ValueError, r"document 0 has no '_id'"),
        (["ok", "lone \ud800 surrogate"], ValueError, r"document 1 is not valid Unicode"),
    ],
)
def test_bad_documents(corpus, error, message) -> None:
    with pytest.raises(error, match=message):
        BM25Index.build(corpus)


def test_bad_document_in_a_later_batch_is_located() -> None:
    corpus = ["word"] * 10 + [42]
    with pytest.raises(TypeError, match="document 10 is int"):
        BM25Index.build(corpus, batch_size=4)


@pytest.mark.parametrize(
    "params, error, message",
    [
        ({"k1": -0.1}, ValueError, r"k1 must be in \[0.0, inf\], got -0.1"),
        ({"k1": float("nan")}, ValueError, r"k1 must be in"),
        ({"k1": "1.2"}, TypeError, r"k1 must be a number, got str"),
        ({"b": 1.01}, ValueError, r"b must be in \[0.0, 1.0\], got 1.01"),
        ({"b": -0.5}, ValueError, r"b must be in"),
        ({"delta": -1}, ValueError, r"delta must be in"),
        ({"method": "bm26"}, ValueError, r"unknown BM25 method 'bm26'; choose one of \['atire'"),
        ({"method": "Lucene"}, ValueError, r"unknown BM25 method 'Lucene'"),
        ({"num_threads": 0}, ValueError, r"num_threads must be a positive int or None, got 0"),
        ({"num_threads": -2}, ValueError, r"num_threads must be a positive int"),
        ({"num_threads": 1.5}, ValueError, r"num_threads must be a positive int"),
    ],
)
def test_bad_parameters(params, error, message) -> None:
    with pytest.raises(error, match=message):
        BM25Index.build(CORPUS, **params)


def test_corpus_of_empty_and_stopword_documents() -> None:
    index = BM25Index.build(["", "the of and", "   "])
    assert index.num_terms == 0 and index.num_documents == 3 and index.avg_doc_length == 0
    result = index.search(["anything", "the"], 5)
    assert np.all(result.ids == -1) and np.all(result.scores == -np.inf)


# --- queries -----------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", " ", "\t\n\r ", "\u00a0\u2003\u3000"])
def test_blank_query_has_no_hits(index: BM25Index, query: str) -> None:
    """A blank query is a valid query that matches nothing, like an all-stopword one."""
    result = index.search(query, 3)
    assert np.all(result.ids == -1) and np.all(result.scores == -np.inf)


def test_blank_queries_in_a_batch_get_empty_rows(index: BM25Index) -> None:
    queries = ["quick", "", "fox dog", " \u3000 "]
    result = index.search(queries, 4)
    oracle, analyzer = oracle_for(index, CORPUS)
    compare_with_oracle(result, oracle, [analyzer.analyze(q) for q in queries], 4)
    assert np.all(result.ids[[1, 3]] == -1)
    alone = index.search(["quick", "fox dog"], 4)
    np.testing.assert_array_equal(result.ids[[0, 2]], alone.ids)
    np.testing.assert_array_equal(result.scores[[0, 2]], alone.scores)


@pytest.mark.parametrize("bad, name", [(3, "int"), (None, "NoneType"), (b"fox", "bytes")])
def test_non_str_query_names_its_index(index: BM25Index, bad, name: str) -> None:
    with pytest.raises(TypeError, match=rf"query 1 is {name}, expected str"):
        index.search(["quick", bad, "fox"])


@pytest.mark.parametrize("queries", [None, 5, {"quick"}, b"quick"])
def test_queries_not_a_sequence(index: BM25Index, queries) -> None:
    with pytest.raises(TypeError, match="expected query texts as a str, a sequence of str"):
        index.search(queries)


@pytest.mark.parametrize("queries", [np.array([["quick"]]), np.array([1.0, 2.0])])
def test_queries_array_not_of_str(index: BM25Index, queries) -> None:
    with pytest.raises(TypeError, match="must be 1-d of dtype str"):
        index.search(queries)


@pytest.mark.parametrize("dtype", [str, object])
def test_numpy_array_of_queries_is_a_batch(index: BM25Index, dtype) -> None:
    queries = ["quick fox", "", "lazy dog"]
    expected = index.search(queries, 3)
    got = index.search(np.array(queries, dtype=dtype), 3)
    np.testing.assert_array_equal(got.ids, expected.ids)
    np.testing.assert_array_equal(got.scores, expected.scores)


def test_unknown_words_and_stopwords_give_padding_rows(index: BM25Index) -> None:
    result = index.search(["zebra xylophone", "the of and a", "!!! ???", "quick"], 3)
    assert np.all(result.ids[:3] == -1) and np.all(result.scores[:3] == -np.inf)
    assert result.ids[3, 0] >= 0


def test_empty_batch(index: BM25Index) -> None:
    result = index.search([], 4)
    assert result.ids.shape == (0, 4) and result.scores.shape == (0, 4)


def test_single_string_is_a_batch_of_one(index: BM25Index) -> None:
    result = index.search("quick fox", 4)
    assert result.ids.shape == result.scores.shape == (1, 4)
    assert result.ids.dtype == np.int64 and result.scores.dtype == np.float32
    np.testing.assert_array_equal(result.ids, index.search(["quick fox"], 4).ids)


@pytest.mark.parametrize("k", [0, -1, -100])
def test_k_below_one(index: BM25Index, k: int) -> None:
    with pytest.raises(ValueError, match=rf"k must be an int >= 1, got {k}"):
        index.search("quick", k)


@pytest.mark.parametrize("k", [2.0, "3", True, None])
def test_k_not_an_int(index: BM25Index, k) -> None:
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        index.search("quick", k)


def test_numpy_integer_k(index: BM25Index) -> None:
    assert index.search("quick", np.int64(2)).ids.shape == (1, 2)


def test_k_above_number_of_documents_gives_every_document(index: BM25Index) -> None:
    result = index.search(["quick", "brown dog"], 50)
    assert result.ids.shape == (2, len(CORPUS))  # min(k, documents) columns
    assert (result.ids[0] >= 0).sum() == 2 and (result.ids[1] >= 0).sum() == 4
    assert_row_invariants(result, len(CORPUS))


def test_lone_surrogate_query(index: BM25Index) -> None:
    with pytest.raises(ValueError, match=r"query 1 is not valid Unicode .*lone surrogate"):
        index.search(["fine", "bad \udc80"])


# --- odd but valid text ------------------------------------------------------------------------


def test_ten_megabyte_document() -> None:
    rng = np.random.default_rng(0)
    words = np.array([f"tok{i}" for i in range(5000)])
    big = " ".join(rng.choice(words, 1_500_000))
    assert len(big) > 10_000_000
    corpus = ["small document tok1", big, "another tok4999 small"]
    index = BM25Index.build(corpus)
    oracle, analyzer = oracle_for(index, corpus)
    queries = ["tok1", "small", "tok4999 tok17"]
    for k in (1, 3):
        compare_with_oracle(
            index.search(queries, k), oracle, [analyzer.analyze(q) for q in queries], k
        )


MULTILINGUAL = [
    "Привет мир, это документ",  # Cyrillic
    "東京は日本の首都です",  # CJK (unigrams)
    "مرحبا بالعالم هذا نص",  # Arabic
    "emoji 🎉🎉 party 🐍 python",
    "mixed 東京 Москва القاهرة café",
    "Ünïcödé ﬁne ligature",
]


@pytest.mark.parametrize(
    "query", ["мир", "東京", "日本", "بالعالم", "party 🎉", "🐍", "Москва", "cafe", "东京"]
)
def test_multilingual_and_emoji(query: str) -> None:
    index = BM25Index.build(MULTILINGUAL)
    oracle, analyzer = oracle_for(index, MULTILINGUAL)
    result = index.search(query, 4)
    compare_with_oracle(result, oracle, [analyzer.analyze(query)], 4)


def test_multilingual_hits() -> None:
    index = BM25Index.build(MULTILINGUAL)
    assert sorted(index.search("東京", 6).ids[0].tolist()[:2]) == [1, 4]
    assert index.search("москва", 6).ids[0, 0] == 4
    assert index.search("🎉", 6).ids[0, 0] == -1  # emoji separate words, they are not terms


def test_nul_bytes_separate_words() -> None:
    index = BM25Index.build(["alpha\x00beta", "gamma"])
    assert Analyzer(index.analyzer).analyze("alpha\x00beta") == ["alpha", "beta"]
    assert index.search("beta\x00", 2).ids[0].tolist() == [0, -1]
    assert index.search("\x00gamma", 2).ids[0].tolist() == [1, -1]
