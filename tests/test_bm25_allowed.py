"""BM25Index.search(allowed=...): a masked row is the exhaustive unmasked ranking with the
masked documents removed (ids and scores), on every accumulation path, layout and selection
path; the numpy oracle agrees; live document frequencies count the allowed postings; bad masks
are refused."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from bm25_checks import PATHS, assert_row_invariants, compare_with_oracle, oracle_for
from test_bm25_oracle import K_PATHS, METHODS, SYNTH, SYNTH_QUERIES

from hybrid_engine import BM25Index, SearchResult
from hybrid_engine.lexical import _kernels as kernels

N_DOCS = len(SYNTH)
_rng = np.random.default_rng(0)
MASKS = {
    "half": _rng.random(N_DOCS) < 0.5,
    "sparse-10pct": _rng.random(N_DOCS) < 0.1,
    "all": np.ones(N_DOCS, dtype=bool),
    "one": np.arange(N_DOCS) == 17,
    "first-block": np.arange(N_DOCS) < 40,  # whole dense windows disallowed after it
}


@pytest.fixture(params=sorted(PATHS))
def path(request, monkeypatch) -> str:
    if PATHS[request.param] is not None:
        dense_work, window = PATHS[request.param]
        monkeypatch.setattr(kernels, "dense_work", dense_work)
        monkeypatch.setattr(kernels, "WINDOW", window)
    return request.param


def masked_exhaustive(full: SearchResult, allowed: np.ndarray, k: int) -> SearchResult:
    """The rows of an exhaustive unmasked search with the disallowed documents removed, cut
    at ``k`` and padded to ``min(k, documents)`` columns: what a masked search must return."""
    out = SearchResult.empty(len(full.ids), min(k, len(allowed)))
    for q, (ids, scores) in enumerate(zip(full.ids, full.scores)):
        keep = (ids >= 0) & allowed[np.maximum(ids, 0)]
        n = min(k, int(keep.sum()))
        out.ids[q, :n] = ids[keep][:n]
        out.scores[q, :n] = scores[keep][:n]
    return out


@pytest.mark.parametrize("cache", [True, False], ids=["impacts", "varint"])
@pytest.mark.parametrize("mask", sorted(MASKS))
def test_masked_rows_are_the_unmasked_ranking_without_the_masked(
    mask: str, cache: bool, path: str
) -> None:
    index = BM25Index.build(SYNTH, k1=1.2, b=0.75, cache_impacts=cache)
    allowed = MASKS[mask]
    full = index.search(SYNTH_QUERIES, N_DOCS)  # every hit: exhaustive
    for k in K_PATHS:
        got = index.search(SYNTH_QUERIES, k, allowed=allowed)
        want = masked_exhaustive(full, allowed, k)
        np.testing.assert_array_equal(got.ids, want.ids, err_msg=f"k={k}")
        np.testing.assert_array_equal(got.scores, want.scores, err_msg=f"k={k}")
        assert_row_invariants(got, N_DOCS)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("cache", [True, False], ids=["impacts", "varint"])
def test_masked_search_matches_the_numpy_oracle(method: str, cache: bool, path: str) -> None:
    index = BM25Index.build(SYNTH, method=method, cache_impacts=cache)
    oracle, analyzer = oracle_for(index, SYNTH)
    tokens = [analyzer.analyze(q) for q in SYNTH_QUERIES]
    for name in ("half", "sparse-10pct"):
        for k in (1, 10, 33, 200):
            result = index.search(SYNTH_QUERIES, k, allowed=MASKS[name])
            compare_with_oracle(result, oracle, tokens, k, MASKS[name])


def test_k_hits_whenever_k_allowed_documents_match() -> None:
    index = BM25Index.build(SYNTH)
    allowed = MASKS["sparse-10pct"]
    oracle, analyzer = oracle_for(index, SYNTH)
    for query in SYNTH_QUERIES:
        _, matched = oracle.scores(analyzer.analyze(query))
        n_allowed = int((matched & allowed).sum())
        for k in (1, 5, 40):
            ids = index.search(query, k, allowed=allowed).ids[0]
            assert int((ids >= 0).sum()) == min(k, n_allowed), (query, k)
            assert allowed[ids[ids >= 0]].all()


def test_all_false_mask_gives_padding_rows() -> None:
    index = BM25Index.build(SYNTH)
    none = np.zeros(N_DOCS, dtype=bool)
    for k in (1, 100):
        result = index.search(SYNTH_QUERIES, k, allowed=none)
        assert result.ids.shape == (len(SYNTH_QUERIES), k)
        assert np.all(result.ids == -1) and np.all(result.scores == -np.inf)


def test_all_true_mask_equals_no_mask() -> None:
    index = BM25Index.build(SYNTH)
    for k in (10, 1000):
        a = index.search(SYNTH_QUERIES, k)
        b = index.search(SYNTH_QUERIES, k, allowed=MASKS["all"])
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)


def test_masked_parallel_batch_equals_single_thread() -> None:
    index = BM25Index.build(SYNTH)
    queries = SYNTH_QUERIES * 20
    one = index.search(queries, 10, num_threads=1, allowed=MASKS["half"])
    many = index.search(queries, 10, num_threads=3, allowed=MASKS["half"])
    np.testing.assert_array_equal(many.ids, one.ids)
    np.testing.assert_array_equal(many.scores, one.scores)


@pytest.mark.parametrize(
    "allowed, error, match",
    [
        (MASKS["half"].astype(np.uint8), TypeError, "dtype bool"),
        (MASKS["half"].tolist(), TypeError, "numpy bool array"),
        (MASKS["half"][:-1], ValueError, rf"shape \({N_DOCS},\)"),
        (MASKS["half"].reshape(1, -1), ValueError, rf"shape \({N_DOCS},\)"),
        (np.repeat(MASKS["half"], 2)[::2], ValueError, "C-contiguous"),
    ],
)
def test_bad_masks_are_refused(allowed, error, match) -> None:
    index = BM25Index.build(SYNTH)
    with pytest.raises(error, match=match):
        index.search("w0", 5, allowed=allowed)
    with pytest.raises(error, match=match):
        index.live_doc_freqs(allowed)


@pytest.mark.parametrize("cache", [True, False], ids=["impacts", "varint"])
def test_live_doc_freqs_count_the_allowed_documents_per_term(cache: bool) -> None:
    index = BM25Index.build(SYNTH, cache_impacts=cache)
    _, analyzer = oracle_for(index, SYNTH)
    tokens = [set(analyzer.analyze(doc)) for doc in SYNTH]
    for allowed in MASKS.values():
        expected = Counter(t for d, terms in enumerate(tokens) if allowed[d] for t in terms)
        got = index.live_doc_freqs(allowed)
        assert got.dtype == np.int64 and got.shape == (index.num_terms,)
        assert {term: int(got[i]) for i, term in enumerate(index.terms) if got[i]} == expected
    all_docs = index.live_doc_freqs(MASKS["all"])
    np.testing.assert_array_equal(all_docs, [index.doc_freq(t) for t in index.terms])
