"""HybridIndex.build's leg options and HybridIndex.from_legs: an engine over legs built apart
equals one built whole; options reach the legs; legs of other documents are refused."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from dense_oracle import HashingEncoder
from sparse_oracle import HashingSparseEncoder

from hybrid_engine import (
    AnalyzerConfig,
    BM25Index,
    BM25Params,
    DenseIndex,
    HybridIndex,
    SearchResult,
    SpladeIndex,
)
from hybrid_engine.pipeline.legs import BM25_OPTIONS, DENSE_OPTIONS

WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()
CORPUS = [
    {
        "_id": f"d{i}",
        "title": WORDS[i % 15],
        "text": " ".join(WORDS[(i * 7 + j) % 15] for j in range(5)),
    }
    for i in range(40)
]
QUERIES = ["cat on the mat", "river stone", "snow and wind fire", "moon"]


def assert_same(got: SearchResult, expected: SearchResult) -> None:
    np.testing.assert_array_equal(got.ids, expected.ids)
    np.testing.assert_array_equal(got.scores, expected.scores)


# -- leg options ----------------------------------------------------------------------------


def test_bm25_options_reach_the_bm25_leg() -> None:
    options = {"k1": 1.2, "b": 0.75, "method": "bm25+", "delta": 0.7}
    analyzer = AnalyzerConfig(stemmer="none", stopwords=False)
    engine = HybridIndex.build(
        CORPUS, retrievers=["bm25"], bm25_options={**options, "analyzer": analyzer}
    )
    assert engine.bm25.params == BM25Params(**options)
    assert engine.bm25.analyzer == analyzer
    reference = BM25Index.build(CORPUS, analyzer=analyzer, **options)
    assert_same(engine.bm25.search(QUERIES, 10), reference.search(QUERIES, 10))


def test_dense_options_reach_the_dense_leg(tmp_path: Path) -> None:
    options = {
        "metric": "ip",
        "m": 8,
        "ef_construction": 50,
        "ef_search": 20,
        "exact_threshold": 10,
        "batch_size": 7,
    }
    encoder = HashingEncoder()
    engine = HybridIndex.build(CORPUS, encoder=encoder, dense_options=options)
    dense = engine.dense
    assert (dense.metric, dense.m, dense.ef_construction, dense.ef_search) == ("ip", 8, 50, 20)
    assert dense.exact_threshold == 10 and dense.uses_graph
    assert {batch for _, batch in encoder.calls} == {7}
    engine.save(tmp_path / "hybrid")
    loaded = HybridIndex.load(tmp_path / "hybrid", encoder=HashingEncoder())
    assert (loaded.dense.metric, loaded.dense.m, loaded.dense.ef_search) == ("ip", 8, 20)
    assert_same(loaded.search(QUERIES, 10), engine.search(QUERIES, 10))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"bm25_options": {"k": 1.0}},
            TypeError,
            r"bm25_options has unknown option\(s\) \['k'\]; valid: \['k1', 'b'",
        ),
        (
            {"dense_options": {"M": 8}},
            TypeError,
            r"unknown option\(s\) \['M'\]; valid: \['metric', 'm'",
        ),
        ({"dense_options": {"encoder": None}}, TypeError, "unknown option"),
        ({"bm25_options": [("k1", 1.0)]}, TypeError, "bm25_options must be a dict"),
        (
            {"retrievers": ["dense"], "bm25_options": {"k1": 1.0}},
            ValueError,
            "bm25_options given, but the retrievers are",
        ),
        ({"bm25_options": {"k1": -1.0}}, ValueError, "k1 must be in"),
        ({"dense_options": {"metric": "l2"}}, ValueError, "unknown metric 'l2'"),
    ],
)
def test_bad_options(kwargs, error, match: str) -> None:
    with pytest.raises(error, match=match):
        HybridIndex.build(CORPUS, encoder=HashingEncoder(), **kwargs)


def test_option_names_are_the_legs_parameters() -> None:
    import inspect

    # title_weight is the engine's (it shapes the texts BM25Index.build is given).
    engine_only = {"title_weight"}
    assert set(BM25_OPTIONS) - engine_only <= set(inspect.signature(BM25Index.build).parameters)
    assert set(DENSE_OPTIONS) <= set(inspect.signature(DenseIndex.build).parameters)


# -- from_legs ------------------------------------------------------------------------------


def test_from_legs_equals_build(tmp_path: Path) -> None:
    whole = HybridIndex.build(
        CORPUS,
        retrievers=("bm25", "dense", "splade"),
        encoder=HashingEncoder(),
        splade_encoder=HashingSparseEncoder(),
    )
    bm25 = BM25Index.build(CORPUS)
    dense = DenseIndex.build(CORPUS, encoder=HashingEncoder())
    splade = SpladeIndex.build(CORPUS, encoder=HashingSparseEncoder())
    engine = HybridIndex.from_legs(CORPUS, bm25=bm25, dense=dense, splade=splade)
    assert engine.bm25 is bm25 and engine.dense is dense and engine.splade is splade
    assert engine.retrievers == ("bm25", "dense", "splade")
    assert list(engine.texts) == list(whole.texts) and list(engine.doc_ids) == list(whole.doc_ids)
    for options in ({}, {"mmr": 0.5}, {"weights": {"dense": 2.0}}):
        assert_same(engine.search(QUERIES, 10, **options), whole.search(QUERIES, 10, **options))
    engine.save(tmp_path / "legs")
    assert list((tmp_path / "legs").glob("seg-*/text_zframes.npy"))  # texts stored compressed
    loaded = HybridIndex.load(
        tmp_path / "legs", encoder=HashingEncoder(), splade_encoder=HashingSparseEncoder()
    )
    assert_same(loaded.search(QUERIES, 10), whole.search(QUERIES, 10))


def test_from_legs_one_leg_and_plain_texts() -> None:
    texts = [doc["text"] for doc in CORPUS]
    dense = DenseIndex.build(texts, encoder=HashingEncoder())
    engine = HybridIndex.from_legs(texts, dense=dense)
    assert engine.retrievers == ("dense",) and engine.doc_ids[:2] == ["0", "1"]
    fused = engine.search(QUERIES, 5, fusion="rrf")  # one list keeps its order
    np.testing.assert_array_equal(fused.ids, dense.search(QUERIES, 5).ids)


def test_from_legs_refuses_legs_of_other_documents() -> None:
    bm25 = BM25Index.build(CORPUS)
    with pytest.raises(ValueError, match="the bm25 leg holds 40 documents, the corpus 39"):
        HybridIndex.from_legs(CORPUS[:-1], bm25=bm25)
    swapped = [CORPUS[1], CORPUS[0], *CORPUS[2:]]
    with pytest.raises(
        ValueError, match="the bm25 leg's document 0 has id 'd0', the corpus's 'd1'"
    ):
        HybridIndex.from_legs(swapped, bm25=bm25)
    plain = [doc["text"] for doc in CORPUS]
    with pytest.raises(ValueError, match="the bm25 leg's documents have ids, the corpus's"):
        HybridIndex.from_legs(plain, bm25=bm25)
    dense = DenseIndex.build(plain, encoder=HashingEncoder())
    with pytest.raises(ValueError, match="the dense leg's documents have no ids"):
        HybridIndex.from_legs(CORPUS, bm25=bm25, dense=dense)


def test_from_legs_bad_legs() -> None:
    with pytest.raises(ValueError, match="give at least one leg"):
        HybridIndex.from_legs(CORPUS)
    with pytest.raises(TypeError, match="dense must be a DenseIndex, got BM25Index"):
        HybridIndex.from_legs(CORPUS, dense=BM25Index.build(CORPUS))
    vectors_only = DenseIndex.from_vectors(
        HashingEncoder().encode([doc["text"] for doc in CORPUS]), ids=[d["_id"] for d in CORPUS]
    )
    with pytest.raises(ValueError, match="the dense leg has no text encoder"):
        HybridIndex.from_legs(CORPUS, dense=vectors_only)
