"""Pseudo-relevance feedback against oracles written here: RM3's expanded queries computed by
hand and by a plain-Python relevance model over a brute-force first pass, the second pass
against a brute-force weighted BM25, Rocchio against numpy; edge cases and parameter errors."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from bm25_checks import doc_text, oracle_for
from bm25_oracle import NumpyBM25, idf, tfc
from dense_oracle import HashingEncoder

from hybrid_engine import RM3, BM25Index, DenseIndex, Rocchio
from hybrid_engine.feedback.relevance_model import rm3_query

CORPUS = [
    {"title": "Stem cells", "text": "Stem cells differentiate into bone and muscle tissue."},
    {"title": "Bone marrow", "text": "Marrow stem cells repair bone after a fracture."},
    {"title": "", "text": "Muscle tissue grows with exercise and protein intake."},
    "Protein folding errors cause disease in neurons and muscle.",
    "Neurons signal through synapses; synapses adapt with learning.",
    "Learning rates of neural networks decay during training.",
    {"title": "Cancer", "text": "Tumour cells divide without control; cancer spreads to bone."},
    "Chemotherapy kills dividing tumour cells and some marrow cells.",
    "Exercise lowers the risk of heart disease and of some cancer.",
    "Heart muscle cells rarely divide after birth.",
    "Training schedules for marathon runners: exercise, rest, protein.",
    "Synapses, neurons and glia form the brain's networks.",
]
QUERIES = [
    "stem cells bone",
    "muscle protein exercise",
    "neurons synapses",
    "cancer tumour chemotherapy",
    "heart disease heart",
    "training networks learning",
]


@pytest.fixture(scope="module")
def lexical() -> tuple[BM25Index, NumpyBM25, list[list[str]], list[list[str]]]:
    index = BM25Index.build(CORPUS)
    oracle, analyzer = oracle_for(index, CORPUS)
    doc_tokens = [analyzer.analyze(doc_text(doc)) for doc in CORPUS]
    return index, oracle, doc_tokens, [analyzer.analyze(q) for q in QUERIES]


def weighted_bm25(oracle: NumpyBM25, query: dict[str, float], k: int) -> tuple[list, list]:
    """Brute-force top-k of ``sum w * idf * tf part`` over every document, ties by position."""
    acc = np.zeros(oracle.n)
    matched = np.zeros(oracle.n, dtype=bool)
    for term, weight in query.items():
        if term not in oracle.postings:
            continue
        docs, tf = oracle.postings[term]
        w = weight * idf(len(docs), oracle.n, oracle.method)
        acc[docs] += w * tfc(tf, oracle.dl[docs], oracle.avgdl, oracle.k1, oracle.b, 0.5, "lucene")
        matched[docs] = True
    ranked = sorted(np.flatnonzero(matched), key=lambda d: (-acc[d], d))[:k]
    return [int(d) for d in ranked], [float(acc[d]) for d in ranked]


def rm3_oracle(
    oracle: NumpyBM25,
    doc_tokens: list[list[str]],
    query_tokens: list[str],
    *,
    fb_docs: int,
    fb_terms: int,
    original_weight: float,
    max_doc_freq: float,
) -> dict[str, float]:
    """Anserini's RM3 recipe, from its description, over the brute-force first pass."""
    if not query_tokens:
        return {}
    docs, scores = weighted_bm25(oracle, dict(Counter(query_tokens)), fb_docs)
    relevance: dict[str, float] = {}
    for d, score in zip(docs, scores):
        first_seen = {}
        for position, term in enumerate(doc_tokens[d]):
            first_seen.setdefault(term, position)
        tf = Counter(doc_tokens[d])
        kept = [t for t in tf if len(oracle.postings[t][0]) <= max_doc_freq * oracle.n]
        kept.sort(key=lambda t: (-tf[t], first_seen[t]))
        kept = kept[:fb_terms]
        length = sum(tf[t] for t in kept)
        for t in kept:
            relevance[t] = relevance.get(t, 0.0) + tf[t] / length * score / sum(scores)
    query = {t: c / len(query_tokens) for t, c in Counter(query_tokens).items()}
    top = sorted(relevance, key=lambda t: (-relevance[t], t))[:fb_terms]
    if not top:
        return query
    mass = sum(relevance[t] for t in top)
    out = {t: original_weight * p for t, p in query.items()}
    for t in top:
        out[t] = out.get(t, 0.0) + (1 - original_weight) * relevance[t] / mass
    return {t: w for t, w in out.items() if w > 0}


# --- the relevance model by hand ----------------------------------------------------------


def test_relevance_model_by_hand() -> None:
    # doc 0 keeps apple (tf 2) and banana (tf 1, before cherry): P = 2/3, 1/3; doc 1 keeps
    # banana and date, 1/2 each. P(D|q) = 3/4, 1/4: apple 1/2, banana 3/8, date 1/8; the top
    # two, rescaled: apple 4/7, banana 3/7. Mixed half and half with the query {apple: 1}.
    expanded = rm3_query(
        ["apple"],
        [["apple", "banana", "apple", "cherry"], ["banana", "date"]],
        [3.0, 1.0],
        fb_terms=2,
        original_weight=0.5,
        keep=lambda term: True,
    )
    assert expanded == pytest.approx({"apple": 11 / 14, "banana": 3 / 14})
    assert list(expanded) == ["apple", "banana"]


def test_relevance_model_drops_terms_not_kept_and_falls_back_to_the_query() -> None:
    kept_none = rm3_query(
        ["a", "b", "a"], [["x", "y"]], [1.0], fb_terms=5, original_weight=0.3, keep=lambda t: False
    )
    assert kept_none == pytest.approx({"a": 2 / 3, "b": 1 / 3})
    only_model = rm3_query(
        ["a"], [["x", "y", "x"]], [2.0], fb_terms=5, original_weight=0.0, keep=lambda t: True
    )
    assert only_model == pytest.approx({"x": 2 / 3, "y": 1 / 3})


# --- search_weighted against brute force -------------------------------------------------


def test_search_weighted_equals_brute_force(lexical) -> None:
    index, oracle, _, _ = lexical
    rng = np.random.default_rng(0)
    vocab = sorted(oracle.postings)
    queries = [
        dict(zip(map(str, rng.choice(vocab, 4, replace=False)), map(float, rng.random(4) + 0.01)))
        for _ in range(20)
    ]
    queries.append({"absentterm": 1.0, vocab[0]: 0.5})
    result = index.search_weighted(queries, 5)
    for query, ids, scores in zip(queries, result.ids, result.scores):
        want_ids, want_scores = weighted_bm25(oracle, query, 5)
        hits = ids >= 0
        assert ids[hits].tolist() == want_ids
        np.testing.assert_allclose(scores[hits], want_scores, rtol=1e-5)


def test_search_weighted_of_counts_equals_search(lexical) -> None:
    index, _, _, query_tokens = lexical
    weighted = index.search_weighted([dict(Counter(q)) for q in query_tokens], 7)
    plain = index.search(QUERIES, 7)
    np.testing.assert_array_equal(weighted.ids, plain.ids)
    np.testing.assert_array_equal(weighted.scores, plain.scores)


def test_search_weighted_empty_queries_are_padding(lexical) -> None:
    index = lexical[0]
    result = index.search_weighted([{}, {"nosuchterm": 2.0}], 3)
    assert (result.ids == -1).all() and (result.scores == -np.inf).all()
    assert index.search_weighted([], 3).ids.shape == (0, 3)


@pytest.mark.parametrize(
    ("queries", "error", "match"),
    [
        ({"cell": 1.0}, TypeError, "sequence of"),
        ("cell", TypeError, "sequence of"),
        (["cell"], TypeError, "expected a mapping"),
        ([{1: 1.0}], TypeError, "expected str"),
        ([{"cell": "1"}], TypeError, "real number"),
        ([{"cell": True}], TypeError, "real number"),
        ([{"cell": 0.0}], ValueError, "weigh it 0"),
        ([{"cell": -1.0}], ValueError, "finite"),
        ([{"cell": float("nan")}], ValueError, "finite"),
        ([{"cell": float("inf")}], ValueError, "finite"),
        ([{"cell": 1e39}], ValueError, "float32"),
    ],
)
def test_search_weighted_rejects_bad_queries(lexical, queries, error, match: str) -> None:
    with pytest.raises(error, match=match):
        lexical[0].search_weighted(queries, 3)


# --- RM3 against the oracle --------------------------------------------------------------


@pytest.mark.parametrize(
    ("fb_docs", "fb_terms", "original_weight", "max_doc_freq"),
    [(10, 10, 0.5, 1.0), (3, 4, 0.7, 0.3), (2, 20, 0.0, 0.25), (50, 3, 1.0, 1.0), (5, 6, 0.5, 0.1)],
)
def test_rm3_expansion_and_second_pass_equal_the_oracle(
    lexical, fb_docs: int, fb_terms: int, original_weight: float, max_doc_freq: float
) -> None:
    index, oracle, doc_tokens, query_tokens = lexical
    rm3 = RM3(
        index,
        CORPUS,
        fb_docs=fb_docs,
        fb_terms=fb_terms,
        original_weight=original_weight,
        max_doc_freq=max_doc_freq,
    )
    first = index.search(QUERIES, fb_docs)
    expanded = rm3.expand(QUERIES)
    result = rm3.search(QUERIES, 8)
    for q, tokens in enumerate(query_tokens):
        want_first, _ = weighted_bm25(oracle, dict(Counter(tokens)), fb_docs)
        assert first.ids[q][first.ids[q] >= 0].tolist() == want_first  # same feedback docs
        want = rm3_oracle(
            oracle,
            doc_tokens,
            tokens,
            fb_docs=fb_docs,
            fb_terms=fb_terms,
            original_weight=original_weight,
            max_doc_freq=max_doc_freq,
        )
        assert expanded[q] == pytest.approx(want, rel=1e-5)
        want_ids, want_scores = weighted_bm25(oracle, want, 8)
        hits = result.ids[q] >= 0
        assert result.ids[q][hits].tolist() == want_ids
        np.testing.assert_allclose(result.scores[q][hits], want_scores, rtol=1e-4)


def test_rm3_expansion_adds_feedback_terms(lexical) -> None:
    index, _, _, query_tokens = lexical
    expanded = RM3(index, CORPUS, fb_docs=3, max_doc_freq=1.0).expand(QUERIES)
    for tokens, query in zip(query_tokens, expanded):
        assert set(tokens) < set(query)  # the query's terms and some more
        assert sum(query.values()) == pytest.approx(1.0)


def test_rm3_with_original_weight_one_ranks_as_bm25(lexical) -> None:
    index, _, _, query_tokens = lexical
    result = RM3(index, CORPUS, original_weight=1.0).search(QUERIES, 10)
    plain = index.search(QUERIES, 10)
    np.testing.assert_array_equal(result.ids, plain.ids)
    lengths = np.array([[len(tokens)] for tokens in query_tokens])
    np.testing.assert_allclose(result.scores * lengths, plain.scores, rtol=1e-6)


def test_rm3_keeps_frequent_terms_out_of_the_feedback(lexical) -> None:
    index, oracle, _, _ = lexical
    expanded = RM3(index, CORPUS, max_doc_freq=0.1).expand(["muscle"])[0]
    common = {t for t, (docs, _) in oracle.postings.items() if len(docs) > 0.1 * oracle.n}
    assert "muscl" in expanded  # a query term, however common
    assert not (set(expanded) - {"muscl"}) & common


# --- RM3 edge cases ----------------------------------------------------------------------


def test_rm3_blank_stopword_and_unknown_queries(lexical) -> None:
    index = lexical[0]
    rm3 = RM3(index, CORPUS)
    queries = ["", "   ", "the of and", "zzzunknown", "stem cells"]
    expanded = rm3.expand(queries)
    assert expanded[:3] == [{}, {}, {}]
    assert expanded[3] == {"zzzunknown": 1.0}  # no hits: the query model alone
    result = rm3.search(queries, 4)
    assert (result.ids[:4] == -1).all() and (result.scores[:4] == -np.inf).all()
    assert (result.ids[4] >= 0).any()
    assert rm3.search([], 4).ids.shape == (0, 4)


def test_rm3_with_more_feedback_docs_than_hits(lexical) -> None:
    index, oracle, doc_tokens, _ = lexical
    tokens = ["neuron", "synaps"]
    rm3 = RM3(index, CORPUS, fb_docs=100, max_doc_freq=1.0)
    want = rm3_oracle(
        oracle,
        doc_tokens,
        tokens,
        fb_docs=100,
        fb_terms=10,
        original_weight=0.5,
        max_doc_freq=1.0,
    )
    assert rm3.expand("neurons synapses")[0] == pytest.approx(want, rel=1e-5)
    assert rm3.search("neurons synapses", 100).ids.shape == (1, min(100, len(CORPUS)))


def test_rm3_refuses_documents_that_are_not_the_index(lexical) -> None:
    index = lexical[0]
    shuffled = CORPUS[1:] + CORPUS[:1]
    with pytest.raises(ValueError, match="the corpus the index was built from"):
        RM3(index, shuffled).search("stem cells bone")
    with pytest.raises(ValueError, match="documents has 11 items"):
        RM3(index, CORPUS[:-1])


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"fb_docs": 0}, ValueError, "fb_docs"),
        ({"fb_docs": 2.5}, ValueError, "fb_docs"),
        ({"fb_terms": 0}, ValueError, "fb_terms"),
        ({"original_weight": 1.5}, ValueError, r"original_weight must be in \[0.0, 1.0\]"),
        ({"original_weight": float("nan")}, ValueError, "original_weight"),
        ({"original_weight": "0.5"}, TypeError, "original_weight must be a real number"),
        ({"max_doc_freq": 0.0}, ValueError, r"max_doc_freq must be in \(0.0, 1.0\]"),
        ({"max_doc_freq": True}, TypeError, "max_doc_freq"),
    ],
)
def test_rm3_rejects_bad_parameters(lexical, kwargs, error, match: str) -> None:
    with pytest.raises(error, match=match):
        RM3(lexical[0], CORPUS, **kwargs)


def test_rm3_rejects_bad_arguments(lexical) -> None:
    with pytest.raises(TypeError, match="BM25Index"):
        RM3("index", CORPUS)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="sequence of the indexed documents"):
        RM3(lexical[0], "text")
    with pytest.raises(ValueError, match="k must be"):
        RM3(lexical[0], CORPUS).search("cells", 0)


# --- Rocchio against numpy ---------------------------------------------------------------


def rocchio_oracle(
    docs: np.ndarray, queries: np.ndarray, metric: str, fb_docs: int, alpha: float, beta: float
) -> np.ndarray:
    """The expanded query vectors from numpy float64, top documents ties by position."""
    d = docs.astype(np.float64)
    q = queries.astype(np.float64)
    if metric == "cosine":
        d /= np.linalg.norm(d, axis=1, keepdims=True)
        q /= np.linalg.norm(q, axis=1, keepdims=True)
    scores = q @ d.T
    positions = np.broadcast_to(np.arange(len(d)), scores.shape)
    top = np.lexsort((positions, -scores), axis=1)[:, :fb_docs]
    expanded = alpha * q + beta * d[top].mean(axis=1)
    if metric == "cosine":
        expanded /= np.linalg.norm(expanded, axis=1, keepdims=True)
    return expanded


def ranked(docs: np.ndarray, queries: np.ndarray, metric: str, k: int) -> tuple:
    d = docs.astype(np.float64)
    if metric == "cosine":
        d /= np.linalg.norm(d, axis=1, keepdims=True)
    scores = queries @ d.T
    positions = np.broadcast_to(np.arange(len(d)), scores.shape)
    top = np.lexsort((positions, -scores), axis=1)[:, :k]
    return top, np.take_along_axis(scores, top, axis=1)


@pytest.mark.parametrize("metric", ["cosine", "ip"])
@pytest.mark.parametrize(
    ("fb_docs", "alpha", "beta"), [(3, 1.0, 0.75), (10, 0.5, 1.0), (1, 0.0, 1.0)]
)
def test_rocchio_equals_numpy(metric: str, fb_docs: int, alpha: float, beta: float) -> None:
    rng = np.random.default_rng(0)
    docs = rng.standard_normal((40, 8)).astype(np.float32)
    queries = rng.standard_normal((6, 8)).astype(np.float32)
    index = DenseIndex.from_vectors(docs, metric=metric)
    rocchio = Rocchio(index, fb_docs=fb_docs, alpha=alpha, beta=beta)
    want = rocchio_oracle(docs, queries, metric, fb_docs, alpha, beta)
    np.testing.assert_allclose(rocchio.expand(queries), want, rtol=1e-5, atol=1e-6)
    result = rocchio.search(queries, 7)
    want_ids, want_scores = ranked(docs, want, metric, 7)
    np.testing.assert_array_equal(result.ids, want_ids)
    np.testing.assert_allclose(result.scores, want_scores, rtol=1e-5, atol=1e-6)


def test_rocchio_beta_zero_is_the_plain_search() -> None:
    rng = np.random.default_rng(1)
    index = DenseIndex.from_vectors(rng.standard_normal((30, 6)))
    queries = rng.standard_normal((4, 6))
    plain = index.search(queries, 5)
    found = Rocchio(index, beta=0.0).search(queries, 5)
    np.testing.assert_array_equal(found.ids, plain.ids)
    np.testing.assert_allclose(found.scores, plain.scores, rtol=1e-6)


def test_rocchio_text_queries_equal_their_vectors() -> None:
    encoder = HashingEncoder()
    texts = [doc_text(doc) for doc in CORPUS]
    index = DenseIndex.build(CORPUS, encoder=encoder)
    rocchio = Rocchio(index, fb_docs=20)  # more than the documents: all of them
    queries = ["stem cells bone", "", "neurons synapses"]
    by_text = rocchio.search(queries, 4)
    by_vector = rocchio.search(encoder.encode([queries[0], queries[2]]), 4)
    np.testing.assert_array_equal(by_text.ids[[0, 2]], by_vector.ids)
    np.testing.assert_allclose(by_text.scores[[0, 2]], by_vector.scores, rtol=1e-6)
    assert (by_text.ids[1] == -1).all() and (by_text.scores[1] == -np.inf).all()
    vectors, query = encoder.encode(texts), encoder.encode(queries[:1])
    want = rocchio_oracle(vectors, query, "cosine", 20, rocchio.alpha, rocchio.beta)
    np.testing.assert_allclose(rocchio.expand(encoder.encode(queries[:1])), want, atol=1e-6)
    assert rocchio.search(["", " "], 2).ids.tolist() == [[-1, -1], [-1, -1]]
    assert rocchio.search([], 2).ids.shape == (0, 2)


def test_rocchio_rejects_bad_arguments() -> None:
    index = DenseIndex.from_vectors(np.eye(4, dtype=np.float32))
    with pytest.raises(ValueError, match="both 0"):
        Rocchio(index, alpha=0.0, beta=0.0)
    with pytest.raises(ValueError, match="beta must be in"):
        Rocchio(index, beta=-0.5)
    with pytest.raises(TypeError, match="alpha must be a real number"):
        Rocchio(index, alpha=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fb_docs"):
        Rocchio(index, fb_docs=0)
    with pytest.raises(TypeError, match="exact must be a bool"):
        Rocchio(index, exact=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="DenseIndex"):
        Rocchio(object())  # type: ignore[arg-type]
    rocchio = Rocchio(index)
    with pytest.raises(ValueError, match="no text encoder"):
        rocchio.search("some text")
    with pytest.raises(ValueError, match="dimension"):
        rocchio.search(np.ones((1, 3)))
    with pytest.raises(ValueError, match="k must be"):
        rocchio.search(np.ones((1, 4)), 0)
