"""BM25Index equals a plain-numpy BM25 over the same tokens: real collections, every variant,
both scoring layouts, dense and sparse accumulation, small-k and radix selection; properties."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from bm25_checks import (
    PATHS,
    assert_row_invariants,
    compare_with_oracle,
    doc_text,
    oracle_for,
    read_jsonl_gz,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hybrid_engine import BM25Index
from hybrid_engine.evaluation import load_corpus, load_queries
from hybrid_engine.lexical import _formulas as formulas
from hybrid_engine.lexical import _kernels as kernels
from hybrid_engine.lexical import _topk as topk

METHODS = sorted(formulas.METHODS)
K_PATHS = (1, 5, topk.SMALL_K, topk.SMALL_K + 1, 100, 1000)  # sorted buffer | radix sort


# --- scifact: every query, both layouts -------------------------------------------------


@pytest.fixture(scope="module")
def scifact(shared_data):
    folder = shared_data / "beir" / "scifact"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent")
    corpus = load_corpus(folder)
    queries = list(load_queries(folder).values())
    index = BM25Index.build(corpus, cache_impacts=True)
    oracle, analyzer = oracle_for(index, corpus)
    return corpus, queries, index, oracle, [analyzer.analyze(q) for q in queries]


@pytest.mark.parametrize("k", [10, 100])
def test_scifact_all_queries_match_oracle(scifact, k: int) -> None:
    corpus, queries, index, oracle, query_tokens = scifact
    assert len(queries) == 1109
    result = index.search(queries, k)
    comparison = compare_with_oracle(result, oracle, query_tokens, k)
    print(
        f"\nscifact k={k}: {comparison.exact}/{len(queries)} id lists equal the oracle's exactly; "
        f"{len(comparison.near_ties)} float32 near-tie swaps {comparison.near_ties[:5]}"
    )
    assert_row_invariants(result, len(corpus))


def test_scifact_layouts_are_identical(scifact) -> None:
    corpus, queries, index, _, _ = scifact
    uncached = BM25Index.build(corpus, cache_impacts=False)
    for k in (10, 100):
        a, b = index.search(queries, k), uncached.search(queries, k)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)


# --- a 50,000-document sample of the scale corpora --------------------------------------


@pytest.mark.slow
def test_scale_sample_matches_oracle(shared_data) -> None:
    files = sorted((shared_data / "scale").glob("*/corpus.jsonl.gz"))
    queries_file = shared_data / "queries" / "msmarco-passage-dev-small.jsonl"
    if not files or not queries_file.is_file():
        pytest.skip("scale corpora or msmarco queries absent")
    docs = [doc for file in files for doc in read_jsonl_gz(file)]
    rng = np.random.default_rng(0)
    corpus = [docs[i] for i in np.sort(rng.choice(len(docs), 50_000, replace=False))]
    queries = list(load_queries(queries_file).values())[:1000]
    index = BM25Index.build(corpus)
    oracle, analyzer = oracle_for(index, corpus)
    result = index.search(queries, 10)
    comparison = compare_with_oracle(result, oracle, [analyzer.analyze(q) for q in queries], 10)
    print(
        f"\nscale sample (50,000 of {len(docs)} docs, seed 0), 1,000 msmarco queries, k=10: "
        f"{comparison.exact}/1000 exact id lists, {len(comparison.near_ties)} near-tie swaps"
    )


# --- synthetic corpora: every method, parameters, layouts, selection paths ---------------


def zipf_corpus(n_docs: int, n_words: int, max_len: int, seed: int) -> list[str]:
    """Documents over a Zipfian vocabulary (some empty); stopwords and stem-merging words."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(n_words - 3)] + ["the", "run", "running"])
    p = 1.0 / np.arange(1, n_words + 1)
    p /= p.sum()
    return [" ".join(rng.choice(words, rng.integers(0, max_len + 1), p=p)) for _ in range(n_docs)]


SYNTH = zipf_corpus(600, 60, 30, seed=0)
SYNTH_QUERIES = [
    "w0",
    "w1 w2",
    "w0 w0 w3",
    "w40",
    "w55 w56",
    "running run",
    "the",
    "w0 w1 w2 w3 w4",
    "w7 w50 w7 w7",
    "unknownword w30",
    "the w12 of",
    "w0 w1",
    "w56",
]
PARAMS = [(0.9, 0.4, 0.5), (1.2, 0.75, 1.0), (0.0, 0.0, 0.0), (2.5, 1.0, 0.25)]


def test_synthetic_queries_cover_dense_and_sparse_paths() -> None:
    index = BM25Index.build(SYNTH)
    encoded = index._encoder.encode(SYNTH_QUERIES)
    terms, _, offsets = encoded
    work = np.array(
        [index._arrays["doc_freqs"][terms[a:b]].sum() for a, b in itertools.pairwise(offsets)]
    )
    dense = work >= kernels.dense_work(index.num_documents, 10)
    assert dense.any() and (~dense & (work > 0)).any(), work


@pytest.fixture(params=sorted(PATHS))
def path(request, monkeypatch) -> str:
    if PATHS[request.param] is not None:
        dense_work, window = PATHS[request.param]
        monkeypatch.setattr(kernels, "dense_work", dense_work)
        monkeypatch.setattr(kernels, "WINDOW", window)
    return request.param


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("k1,b,delta", PARAMS)
@pytest.mark.parametrize("cache", [True, False])
def test_synthetic_matches_oracle(
    method: str, k1: float, b: float, delta: float, cache: bool, path: str
) -> None:
    index = BM25Index.build(SYNTH, k1=k1, b=b, method=method, delta=delta, cache_impacts=cache)
    oracle, analyzer = oracle_for(index, SYNTH)
    tokens = [analyzer.analyze(q) for q in SYNTH_QUERIES]
    for k in K_PATHS:
        result = index.search(SYNTH_QUERIES, k)
        compare_with_oracle(result, oracle, tokens, k)
        assert_row_invariants(result, len(SYNTH))


@pytest.mark.parametrize("n", [0, 5, 16, 47, 1000])
@pytest.mark.parametrize("masked", [False, True])
def test_collect_range_appends_what_numpy_selects(n: int, masked: bool) -> None:
    """``collect_range`` (tested a block at a time) appends exactly the allowed entries
    above the bound, in position order, after those already collected: numpy's selection."""
    rng = np.random.default_rng(n)
    acc = np.where(rng.random(n) < 0.1, rng.random(n), 0.0)  # mostly untouched documents
    base, count = 7, 3
    allowed = rng.random(base + n) < 0.5 if masked else None
    for bound in (0.0, 0.5, 0.95):
        docs = np.full(count + n + 1, -9, dtype=np.int32)
        scores = np.zeros(count + n + 1, dtype=np.float32)
        end = topk.collect_range(acc, n, base, bound, docs, scores, count, allowed)
        keep = acc > bound
        if allowed is not None:
            keep &= allowed[base:]
        expected = np.flatnonzero(keep)
        assert end == count + len(expected)
        np.testing.assert_array_equal(docs[count:end], base + expected)
        np.testing.assert_array_equal(scores[count:end], acc[expected].astype(np.float32))
        assert (docs[:count] == -9).all()


def test_paths_give_identical_rows(monkeypatch) -> None:
    index = BM25Index.build(SYNTH, cache_impacts=False)
    for k in K_PATHS:
        reference = index.search(SYNTH_QUERIES, k)
        for dense_work, window in (p for p in PATHS.values() if p is not None):
            with monkeypatch.context() as patch:
                patch.setattr(kernels, "dense_work", dense_work)
                patch.setattr(kernels, "WINDOW", window)
                result = index.search(SYNTH_QUERIES, k)
            np.testing.assert_array_equal(result.ids, reference.ids)
            np.testing.assert_array_equal(result.scores, reference.scores)


@pytest.mark.parametrize("n_docs", [1, 2, 3, 40, 2500])
def test_corpus_sizes(n_docs: int) -> None:
    corpus = zipf_corpus(n_docs, 25, 12, seed=n_docs)
    queries = ["w0", "w1 w5 w9", "w20", "w0 w1 w2 w3", "w3 w3"]
    for cache in (True, False):
        index = BM25Index.build(corpus, cache_impacts=cache)
        oracle, analyzer = oracle_for(index, corpus)
        for k in K_PATHS:
            compare_with_oracle(
                index.search(queries, k), oracle, [analyzer.analyze(q) for q in queries], k
            )


def test_title_and_text_are_indexed_together() -> None:
    corpus = [
        {"title": "alpha", "text": "beta"},
        {"text": "alpha alpha"},
        {"title": "", "text": "gamma"},
    ]
    index = BM25Index.build(corpus)
    oracle, analyzer = oracle_for(index, corpus)
    assert analyzer.analyze(doc_text(corpus[0])) == ["alpha", "beta"]
    queries = ["alpha", "beta gamma"]
    compare_with_oracle(index.search(queries, 3), oracle, [analyzer.analyze(q) for q in queries], 3)


def test_repeated_query_terms_count_per_occurrence() -> None:
    corpus = ["apple pie", "banana split", "apple banana"]
    index = BM25Index.build(corpus)
    once, thrice = index.search(["apple banana", "apple apple apple banana"], 3).scores
    oracle, analyzer = oracle_for(index, corpus)
    np.testing.assert_allclose(
        thrice, oracle.top_k(analyzer.analyze("apple apple apple banana"), 3)[1], rtol=1e-6
    )
    assert thrice[0] > once[0]


def test_robertson_common_terms_neither_score_nor_match() -> None:
    corpus = ["common rare", "common", "common other", "zzz"]  # 'common' in 3 of 4 docs
    index = BM25Index.build(corpus, method="robertson")
    result = index.search(["common", "common rare"], 4)
    assert result.ids[0].tolist() == [-1] * 4  # idf clamped at 0: no hits
    assert result.ids[1].tolist() == [0, -1, -1, -1]


def test_doc_ids_are_corpus_ids_or_positions() -> None:
    index = BM25Index.build([{"_id": "a", "text": "xx yy"}, {"_id": "b", "text": "yy zz"}])
    assert [index.doc_ids[i] for i in index.search("zz", 2).ids[0] if i >= 0] == ["b"]
    assert index.doc_ids[:] == ["a", "b"]
    plain = BM25Index.build(["x y", "y z"])
    assert plain.doc_ids[1] == "1" and plain.doc_ids[-1] == "1"
    with pytest.raises(IndexError):
        plain.doc_ids[2]


# --- properties ----------------------------------------------------------------------------

VOCAB = ["apple", "apples", "banana", "cherry", "the", "date", "elder", "fig"]
documents = st.lists(st.sampled_from(VOCAB), max_size=10).map(" ".join)
corpora = st.lists(documents, min_size=1, max_size=40)
queries_st = st.lists(
    st.lists(st.sampled_from([*VOCAB, "zzz"]), min_size=1, max_size=6).map(" ".join),
    min_size=1,
    max_size=6,
)
configs = st.fixed_dictionaries(
    {
        "method": st.sampled_from(METHODS),
        "k1": st.sampled_from([0.0, 0.5, 0.9, 2.0]),
        "b": st.sampled_from([0.0, 0.4, 0.75, 1.0]),
        "delta": st.sampled_from([0.0, 0.5, 1.0]),
        "cache_impacts": st.booleans(),
    }
)
ks = st.sampled_from([1, 2, 5, topk.SMALL_K, topk.SMALL_K + 1, 100])
PROPERTY_SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@PROPERTY_SETTINGS
@given(corpus=corpora, queries=queries_st, config=configs, k=ks)
def test_property_matches_oracle_and_row_invariants(corpus, queries, config, k) -> None:
    index = BM25Index.build(corpus, **config)
    oracle, analyzer = oracle_for(index, corpus)
    result = index.search(queries, k)
    compare_with_oracle(result, oracle, [analyzer.analyze(q) for q in queries], k)
    assert_row_invariants(result, len(corpus))


@PROPERTY_SETTINGS
@given(corpus=corpora, queries=queries_st, config=configs, k=ks)
def test_property_save_load_identical(tmp_path_factory, corpus, queries, config, k) -> None:
    index = BM25Index.build(corpus, **config)
    path = tmp_path_factory.mktemp("index") / "bm25"
    index.save(path)
    expected = index.search(queries, k)
    for mmap in (False, True):
        loaded = BM25Index.load(path, mmap=mmap)
        got = loaded.search(queries, k)
        np.testing.assert_array_equal(got.ids, expected.ids)
        np.testing.assert_array_equal(got.scores, expected.scores)
        assert loaded.params == index.params and loaded.analyzer == index.analyzer


@PROPERTY_SETTINGS
@given(corpus=corpora, queries=queries_st, config=configs, seed=st.integers(0, 2**32 - 1))
def test_property_permuting_corpus_permutes_ids(corpus, queries, config, seed) -> None:
    perm = np.random.default_rng(seed).permutation(len(corpus))
    a = BM25Index.build(corpus, **config)
    b = BM25Index.build([corpus[i] for i in perm], **config)
    k = len(corpus)  # every hit, so ties at the cut cannot pick different documents
    ra, rb = a.search(queries, k), b.search(queries, k)
    np.testing.assert_array_equal(ra.scores, rb.scores)
    for ids_a, ids_b, scores in zip(ra.ids, rb.ids, ra.scores):
        hits = ids_a >= 0
        assert sorted(zip(scores[hits], ids_a[hits])) == sorted(
            zip(scores[hits], perm[ids_b[hits]])
        )
    # and a small k returns the same scores
    np.testing.assert_array_equal(a.search(queries, 2).scores, b.search(queries, 2).scores)
