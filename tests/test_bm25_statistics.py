"""Collection statistics from outside: an index scoring with the live documents' N, df and
average length (``with_statistics``) and searched with ``allowed`` gives exactly the scores
and ranking of a fresh build over the live documents, for one index with deletions and for two
indexes merged by score; the view shares the postings; bad statistics are refused."""

from __future__ import annotations

import numpy as np
import pytest
from bm25_checks import compare_with_oracle, oracle_for
from test_bm25_oracle import K_PATHS, METHODS, SYNTH, SYNTH_QUERIES

from hybrid_engine import BM25Index, SearchResult
from hybrid_engine.lexical import Analyzer, AnalyzerConfig, CollectionStats

A, B, C = SYNTH[:250], SYNTH[250:400], SYNTH[400:]


def build(docs: list[str], method: str, cache: bool) -> BM25Index:
    return BM25Index.build(docs, method=method, k1=1.2, b=0.75, delta=0.5, cache_impacts=cache)


def global_doc_freqs(indexes: list[BM25Index], masks: list[np.ndarray]) -> list[np.ndarray]:
    """Each index's term ids mapped to the summed live df of the term over all indexes."""
    total: dict[str, int] = {}
    for index, allowed in zip(indexes, masks):
        for term, df in zip(index.terms, index.live_doc_freqs(allowed).tolist()):
            total[term] = total.get(term, 0) + df
    return [np.array([total[t] for t in index.terms], dtype=np.int64) for index in indexes]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("cache", [True, False], ids=["impacts", "varint"])
def test_deleted_documents_score_like_a_fresh_build_without_them(method: str, cache: bool) -> None:
    index = build(A + B + C, method, cache)
    live = np.ones(len(SYNTH), dtype=bool)
    live[len(A) : len(A) + len(B)] = False
    view = index.with_statistics(index.live_statistics(live), index.live_doc_freqs(live))
    fresh = build(A + C, method, cache)
    # fresh position -> position in the index (B's positions are skipped)
    positions = np.flatnonzero(live)
    for k in K_PATHS:
        want = fresh.search(SYNTH_QUERIES, k)
        got = cut(view.search(SYNTH_QUERIES, k, allowed=live), want.ids.shape[1])
        hits = want.ids >= 0
        np.testing.assert_array_equal(got.ids >= 0, hits, err_msg=f"k={k}")
        np.testing.assert_array_equal(got.ids[hits], positions[want.ids[hits]], err_msg=f"k={k}")
        np.testing.assert_array_equal(got.scores, want.scores, err_msg=f"k={k}")
    # and the plain-numpy BM25 over the live documents agrees (ids back in fresh positions)
    oracle, analyzer = oracle_for(fresh, A + C)
    got = view.search(SYNTH_QUERIES, 50, allowed=live)
    back = np.full(len(SYNTH), -1, np.int64)
    back[positions] = np.arange(len(positions))
    as_fresh = SearchResult(np.where(got.ids >= 0, back[got.ids], -1), got.scores)
    compare_with_oracle(as_fresh, oracle, [analyzer.analyze(q) for q in SYNTH_QUERIES], 50)


def cut(result: SearchResult, width: int) -> SearchResult:
    """``result``'s first ``width`` columns, the others being padding: a view searched with
    deletions is as wide as its documents, the fresh build of the live ones narrower."""
    assert (result.ids[:, width:] == -1).all() and np.isneginf(result.scores[:, width:]).all()
    return SearchResult(result.ids[:, :width], result.scores[:, :width])


def merge_by_score(rows: list[SearchResult], k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per query, the best ``k`` of several indexes' rows: (index number, position, score),
    by score descending, ties by index number then position; padded with -1 / -inf."""
    n_queries = len(rows[0].ids)
    which = np.full((n_queries, k), -1, np.int64)
    ids = np.full((n_queries, k), -1, np.int64)
    scores = np.full((n_queries, k), -np.inf, np.float32)
    for q in range(n_queries):
        hits = [
            (-float(s), i, int(d))
            for i, row in enumerate(rows)
            for d, s in zip(row.ids[q], row.scores[q])
            if d >= 0
        ]
        for r, (s, i, d) in enumerate(sorted(hits)[:k]):
            which[q, r], ids[q, r], scores[q, r] = i, d, -s
    return which, ids, scores


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("cache", [True, False], ids=["impacts", "varint"])
@pytest.mark.parametrize("deletions", [False, True])
def test_two_indexes_merged_by_score_equal_one_fresh_build(
    method: str, cache: bool, deletions: bool
) -> None:
    parts = [SYNTH[:320], SYNTH[320:]]
    indexes = [build(docs, method, cache) for docs in parts]
    rng = np.random.default_rng(1)
    masks = [
        rng.random(len(docs)) < 0.7 if deletions else np.ones(len(docs), bool) for docs in parts
    ]
    stats = indexes[0].live_statistics(masks[0]) + indexes[1].live_statistics(masks[1])
    views = [
        index.with_statistics(stats, dfs)
        for index, dfs in zip(indexes, global_doc_freqs(indexes, masks))
    ]
    live_docs = [(i, int(d)) for i, mask in enumerate(masks) for d in np.flatnonzero(mask)]
    fresh = build([parts[i][d] for i, d in live_docs], method, cache)
    assert stats == fresh.statistics
    for k in K_PATHS:
        rows = [view.search(SYNTH_QUERIES, k, allowed=mask) for view, mask in zip(views, masks)]
        want = fresh.search(SYNTH_QUERIES, k)
        which, ids, scores = merge_by_score(rows, want.ids.shape[1])  # min(k, live documents)
        expected = [[live_docs[d] if d >= 0 else (-1, -1) for d in row] for row in want.ids]
        assert [list(zip(w, d)) for w, d in zip(which.tolist(), ids.tolist())] == expected
        np.testing.assert_array_equal(scores, want.scores, err_msg=f"k={k}")


def test_own_statistics_change_nothing() -> None:
    index = BM25Index.build(SYNTH)
    everything = np.ones(len(SYNTH), dtype=bool)
    assert index.live_statistics(everything) == index.statistics
    view = index.with_statistics(index.statistics, index.live_doc_freqs(everything))
    for k in (10, 100):
        a, b = index.search(SYNTH_QUERIES, k), view.search(SYNTH_QUERIES, k)
        np.testing.assert_array_equal(a.ids, b.ids)
        np.testing.assert_array_equal(a.scores, b.scores)


@pytest.mark.parametrize("method", METHODS)
def test_terms_whose_live_documents_are_all_deleted_match_nothing(method: str) -> None:
    index = BM25Index.build(["alpha beta", "gamma gamma", "beta delta"], method=method)
    live = np.array([True, False, True])
    view = index.with_statistics(index.live_statistics(live), index.live_doc_freqs(live))
    for allowed in (None, live):  # df 0: no hit, and no inf even where the document is there
        result = view.search(["gamma", "gamma beta"], 3, allowed=allowed)
        assert result.ids[0].tolist() == [-1, -1, -1]
        assert np.all(np.isfinite(result.scores[1][result.ids[1] >= 0]))
        assert 1 not in result.ids[1].tolist()


def test_the_view_shares_the_index_and_reports_its_statistics() -> None:
    index = BM25Index.build(SYNTH, cache_impacts=True)
    stats = CollectionStats(n_docs=10_000, total_length=123_456)
    dfs = np.minimum(index.live_doc_freqs(np.ones(len(SYNTH), bool)) * 3, 10_000)
    view = index.with_statistics(stats, dfs)
    assert view.statistics == stats and view.avg_doc_length == 123_456 / 10_000
    assert view.num_documents == index.num_documents and view.doc_ids is index.doc_ids
    for name, array in index._arrays.items():
        assert view._arrays[name] is array, name
    assert view._encoder is index._encoder
    assert index.statistics == CollectionStats(len(SYNTH), int(index.doc_lengths.sum()))
    # a view of a view scores with the statistics given last
    again = view.with_statistics(index.statistics, index.live_doc_freqs(np.ones(len(SYNTH), bool)))
    np.testing.assert_array_equal(
        again.search(SYNTH_QUERIES, 10).scores, index.search(SYNTH_QUERIES, 10).scores
    )


def test_a_view_is_not_saved(tmp_path) -> None:
    index = BM25Index.build(SYNTH[:50])
    view = index.with_statistics(CollectionStats(100, 900), np.ones(index.num_terms, np.int64))
    with pytest.raises(ValueError, match="save the index it was made from"):
        view.save(tmp_path / "view")
    index.save(tmp_path / "index")


def test_bad_statistics_are_refused() -> None:
    index = BM25Index.build(SYNTH[:50])
    n_terms = index.num_terms
    ok = np.ones(n_terms, np.int64)
    stats = CollectionStats(100, 900)
    with pytest.raises(TypeError, match="CollectionStats"):
        index.with_statistics((100, 900), ok)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_docs must be >= 1"):
        index.with_statistics(CollectionStats(0, 0), ok)
    with pytest.raises(TypeError, match="int64"):
        index.with_statistics(stats, ok.astype(np.int32))
    with pytest.raises(TypeError, match="int64"):
        index.with_statistics(stats, ok.tolist())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=rf"shape \({n_terms},\)"):
        index.with_statistics(stats, ok[:-1])
    for bad in (-1, 101):
        dfs = ok.copy()
        dfs[3] = bad
        with pytest.raises(ValueError, match=rf"doc_freqs\[3\] \(term '{index.terms[3]}'\)"):
            index.with_statistics(stats, dfs)


def test_collection_stats() -> None:
    a, b = CollectionStats(3, 10), CollectionStats(np.int64(2), 5)
    assert a + b == CollectionStats(5, 15) and (a + b).avg_doc_length == 3.0
    assert type(b.n_docs) is int and CollectionStats(0, 0).avg_doc_length == 0.0
    for bad in ((-1, 0), (1, -1), (1.5, 2), (True, 2), (0, 4)):
        with pytest.raises(ValueError, match="CollectionStats"):
            CollectionStats(*bad)  # type: ignore[arg-type]


def test_terms_and_doc_lengths() -> None:
    docs = ["the running dogs", "dogs and cats", "", "cats cats"]
    index = BM25Index.build(docs)
    analyzer = Analyzer(index.analyzer)
    tokens = [analyzer.analyze(doc) for doc in docs]
    first_seen = list(dict.fromkeys(t for doc in tokens for t in doc))
    assert list(index.terms) == first_seen
    assert [index.term_id(t) for t in index.terms] == list(range(index.num_terms))
    lengths = index.doc_lengths
    assert lengths.dtype == np.int32 and lengths.tolist() == [len(t) for t in tokens]
    with pytest.raises(ValueError, match="read-only"):
        lengths[0] = 5
    assert index.avg_doc_length == sum(map(len, tokens)) / len(docs)


def test_the_live_term_map_gives_the_ids_a_dict_would() -> None:
    """``live.statistics.TermMap`` (a C++ string table) against a dict filled in the same
    order: the same shared ids, terms and size, over segments that share some terms; its
    lookups (``find``) and terms by id (``take``) too."""
    from hybrid_engine import _core
    from hybrid_engine.live.statistics import TermMap

    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(500)] + ["café", "東京", "ñandú"]
    table, oracle = TermMap(), {}
    for _ in range(4):
        texts = [" ".join(rng.choice(words, size=8)) for _ in range(50)]
        index = BM25Index.build(texts, analyzer=AnalyzerConfig(stemmer="none", strip_accents=False))
        expected = [oracle.setdefault(term, len(oracle)) for term in index.terms]
        assert table.map(index).tolist() == expected
    assert table.terms == list(oracle) and len(table) == len(oracle)
    # Lookups without inserting, and terms by id (what a shard's statistics use).
    asked = ["w3", "absent", "ñandú", "w3"]
    assert table.find(asked).tolist() == [oracle.get(term, -1) for term in asked]
    assert len(table) == len(oracle)
    ids = np.array([oracle["café"], 0, oracle["w7"]], np.int64)
    assert table.take(ids) == ["café", next(iter(oracle)), "w7"]
    with pytest.raises(IndexError, match="outside"):
        table.take(np.array([len(oracle)], np.int64))
    raw = _core.StringTable()
    with pytest.raises(ValueError, match="offsets must run from 0 to the number of bytes"):
        raw.insert_arena(np.frombuffer(b"abc", np.uint8), np.array([0, 2], np.int64))
    with pytest.raises(ValueError, match="offsets must not fall"):
        raw.insert_arena(np.frombuffer(b"abc", np.uint8), np.array([0, 2, 1, 3], np.int64))
