"""Metric tests: agreement with pytrec_eval (trec_eval) on real BM25 runs and generated runs."""

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_engine.evaluation import (
    SUPPORTED_METRICS,
    EvalResult,
    evaluate,
    load_beir,
    parse_metric,
    run_from_results,
)

Run = dict[str, dict[str, float]]
Qrels = dict[str, dict[str, int]]

# our metric kind -> the trec_eval measure family that pytrec_eval computes
TREC_FAMILY = {"ndcg": "ndcg_cut", "recall": "recall", "map": "map_cut", "hit_rate": "success"}
REAL_METRICS = (
    "ndcg@10",
    "ndcg@100",
    "recall@10",
    "recall@100",
    "map@100",
    "mrr@10",
    "mrr@100",
    "hit_rate@1",
    "hit_rate@5",
    "hit_rate@10",
)
SMALL_METRICS = (
    "ndcg@1",
    "ndcg@3",
    "ndcg@10",
    "recall@1",
    "recall@3",
    "map@3",
    "map@10",
    "mrr@1",
    "mrr@3",
    "hit_rate@1",
    "hit_rate@5",
    "hit_rate@10",
)


def _truncate(run: Run, k: int) -> Run:
    """Cut each ranking to its k best in trec_eval order (score, then doc id, both descending)."""
    return {
        query_id: dict(
            sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)[:k]
        )
        for query_id, scores in run.items()
    }


def _reference(run: Run, qrels: Qrels, metrics: Sequence[str]) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-query values, keyed by our metric names; mrr@k is recip_rank cut at k."""
    cutoffs: dict[str, set[int]] = {}
    for name in metrics:
        kind, k = parse_metric(name)
        cutoffs.setdefault(kind, set()).add(k)
    measures = {
        f"{TREC_FAMILY[kind]}.{','.join(map(str, sorted(ks)))}"
        for kind, ks in cutoffs.items()
        if kind != "mrr"
    }
    plain = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run) if measures else {}
    by_cutoff = {
        k: pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(_truncate(run, k))
        for k in cutoffs.get("mrr", set())
    }
    values: dict[str, dict[str, float]] = {}
    for query_id in set(plain) | {q for result in by_cutoff.values() for q in result}:
        row = values.setdefault(query_id, {})
        for name in metrics:
            kind, k = parse_metric(name)
            if kind == "mrr":
                row[name] = by_cutoff[k][query_id]["recip_rank"]
            else:
                row[name] = plain[query_id][f"{TREC_FAMILY[kind]}_{k}"]
    return values


def _assert_agrees(run: Run, qrels: Qrels, metrics: Sequence[str]) -> None:
    ours = evaluate(run, qrels, metrics, per_query=True)
    reference = _reference(run, qrels, metrics)
    evaluated = [q for q, judged in qrels.items() if any(grade >= 1 for grade in judged.values())]
    assert list(ours.per_query) == evaluated
    for query_id in evaluated:
        expected = reference.get(query_id, dict.fromkeys(metrics, 0.0))  # absent from run: 0
        for name in metrics:
            assert ours.per_query[query_id][name] == pytest.approx(expected[name], abs=1e-6), (
                query_id,
                name,
            )
    if all(query_id in run for query_id in evaluated):
        for name in metrics:
            reference_mean = sum(reference[q][name] for q in evaluated) / len(evaluated)
            assert ours.mean[name] == pytest.approx(reference_mean, abs=1e-6), name


@pytest.fixture(scope="module", params=["scifact", "cranfield"])
def bm25_run(request: pytest.FixtureRequest, shared_data: Path) -> tuple[str, Run, Qrels]:
    """A real bm25s run (k1=0.9, b=0.4, English stopwords and stemming, top 100) on a test split."""
    bm25s = pytest.importorskip("bm25s")
    stemmer_module = pytest.importorskip("Stemmer")
    name = request.param
    dataset = load_beir(shared_data / "beir" / name)
    stemmer = stemmer_module.Stemmer("english")
    documents = [doc["title"] + " " + doc["text"] for doc in dataset.corpus]
    retriever = bm25s.BM25(k1=0.9, b=0.4)
    retriever.index(
        bm25s.tokenize(documents, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    query_ids = list(dataset.queries)
    query_tokens = bm25s.tokenize(
        [dataset.queries[q] for q in query_ids],
        stopwords="en",
        stemmer=stemmer,
        show_progress=False,
    )
    ids, scores = retriever.retrieve(query_tokens, k=100, show_progress=False)
    doc_ids = [doc["_id"] for doc in dataset.corpus]
    return name, run_from_results(ids, scores, query_ids, doc_ids), dataset.qrels


def test_real_bm25_run_agrees_with_pytrec_eval(bm25_run: tuple[str, Run, Qrels]) -> None:
    _, run, qrels = bm25_run
    assert any(len(set(scores.values())) < len(scores) for scores in run.values())  # has ties
    _assert_agrees(run, qrels, REAL_METRICS)


def test_real_bm25_run_matches_published_figures(bm25_run: tuple[str, Run, Qrels]) -> None:
    # shared/data/README.md: bm25s with these settings gave scifact 0.676, cranfield 0.342
    expected_range = {"scifact": (0.66, 0.69), "cranfield": (0.32, 0.37)}
    name, run, qrels = bm25_run
    low, high = expected_range[name]
    assert low < evaluate(run, qrels, ["ndcg@10"])["ndcg@10"] < high


DOC_IDS = st.sampled_from(["a", "b", "B", "z", "d1", "d9", "d10", "9", "10", "é"])
SCORES = st.one_of(
    st.sampled_from([-1.0, 0.0, 1.0, 2.5]),  # few values, so ties are common
    st.floats(-10, 10, allow_nan=False, width=32),
)
QUERY_IDS = st.sampled_from(["q1", "q2", "q3", "q4"])
RUNS = st.dictionaries(QUERY_IDS, st.dictionaries(DOC_IDS, SCORES, max_size=10), max_size=4)
QRELS = st.dictionaries(
    QUERY_IDS,
    st.dictionaries(DOC_IDS, st.integers(-1, 3), min_size=1, max_size=8),
    min_size=1,
    max_size=4,
)


@settings(max_examples=300, deadline=None)
@given(run=RUNS, qrels=QRELS)
def test_generated_runs_agree_with_pytrec_eval(run: Run, qrels: Qrels) -> None:
    if not any(grade >= 1 for judged in qrels.values() for grade in judged.values()):
        with pytest.raises(ValueError, match="no query with a relevant document"):
            evaluate(run, qrels, SMALL_METRICS)
        return
    _assert_agrees(run, qrels, SMALL_METRICS)


@settings(max_examples=100, deadline=None)
@given(run=RUNS, qrels=QRELS)
def test_values_lie_in_unit_interval(run: Run, qrels: Qrels) -> None:
    if any(grade >= 1 for judged in qrels.values() for grade in judged.values()):
        result = evaluate(run, qrels, SMALL_METRICS, per_query=True)
        assert all(0.0 <= v <= 1.0 for row in result.per_query.values() for v in row.values())


def test_ties_break_by_doc_id_descending() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"10": 1}}
    run = {"q1": {"a": 1.0, "b": 1.0}, "q2": {"10": 2.0, "9": 2.0}}  # "9" > "10" as strings
    assert evaluate(run, qrels, ["mrr@10"], per_query=True).per_query == {
        "q1": {"mrr@10": 0.5},
        "q2": {"mrr@10": 0.5},
    }


def test_perfect_run_scores_one() -> None:
    qrels = {"q1": {"a": 3, "b": 1, "c": 0}, "q2": {"d": 2}}
    run = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0, "x": 0.5}, "q2": {"d": 1.0}}
    assert evaluate(run, qrels, [f"{kind}@10" for kind in SUPPORTED_METRICS]) == dict.fromkeys(
        [f"{kind}@10" for kind in SUPPORTED_METRICS], 1.0
    )


def test_queries_missing_from_run_count_as_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    result = evaluate(
        {"q1": {"a": 1.0}, "unjudged": {"a": 1.0}}, qrels, ["ndcg@10"], per_query=True
    )
    assert result == EvalResult(
        mean={"ndcg@10": 0.5}, per_query={"q1": {"ndcg@10": 1.0}, "q2": {"ndcg@10": 0.0}}
    )


def test_queries_without_relevant_documents_are_left_out() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 0}}
    result = evaluate({"q1": {"a": 1.0}}, qrels, ["recall@10"], per_query=True)
    assert result == EvalResult(mean={"recall@10": 1.0}, per_query={"q1": {"recall@10": 1.0}})


def test_no_relevant_document_anywhere_is_an_error() -> None:
    with pytest.raises(ValueError, match="no query with a relevant document"):
        evaluate({"q1": {"a": 1.0}}, {"q1": {"a": 0}})


def test_default_metrics() -> None:
    result = evaluate({"q1": {"a": 1.0}}, {"q1": {"a": 1}})
    assert result == {"ndcg@10": 1.0, "recall@100": 1.0, "mrr@10": 1.0, "map@100": 1.0}


def test_nan_score_is_an_error() -> None:
    with pytest.raises(ValueError, match="NaN"):
        evaluate({"q1": {"a": math.nan}}, {"q1": {"a": 1}})


def test_single_string_metrics_is_an_error() -> None:
    with pytest.raises(TypeError, match="collection of names"):
        evaluate({"q1": {"a": 1.0}}, {"q1": {"a": 1}}, "ndcg@10")


@pytest.mark.parametrize(
    ("name", "parsed"),
    [("ndcg@10", ("ndcg", 10)), ("hit_rate@1", ("hit_rate", 1)), ("map@1000", ("map", 1000))],
)
def test_parse_metric(name: str, parsed: tuple[str, int]) -> None:
    assert parse_metric(name) == parsed


@pytest.mark.parametrize(
    "name", ["ndcg", "ndcg@", "ndcg@0", "ndcg@-1", "ndcg@x", "p@10", "NDCG@10"]
)
def test_parse_metric_rejects_unknown_names(name: str) -> None:
    with pytest.raises(ValueError, match="ndcg, recall, mrr, map, hit_rate"):
        parse_metric(name)


def test_run_from_results_skips_padding() -> None:
    ids = np.array([[2, 0, -1], [-1, -1, -1]], dtype=np.int64)
    scores = np.array([[3.5, 1.25, -np.inf], [-np.inf] * 3], dtype=np.float32)
    run = run_from_results(ids, scores, ["q1", "q2"], ["d0", "d1", "d2"])
    assert run == {"q1": {"d2": 3.5, "d0": 1.25}, "q2": {}}


def test_run_from_results_keeps_float32_scores_exactly() -> None:
    scores = np.array([[0.1]], dtype=np.float32)
    run = run_from_results(np.array([[0]]), scores, ["q"], ["d"])
    assert run["q"]["d"] == float(scores[0, 0])


@pytest.mark.parametrize(
    ("ids", "scores", "query_ids", "error", "message"),
    [
        ([[0, 1]], [[1.0]], ["q"], ValueError, "shape"),
        ([[0, 1]], [[1.0, 0.5]], ["q", "r"], ValueError, "shape"),
        ([[0.0, 1.0]], [[1.0, 0.5]], ["q"], ValueError, "integer"),
        ([[0, 3]], [[1.0, 0.5]], ["q"], IndexError, "positions in"),
        ([[0, -2]], [[1.0, 0.5]], ["q"], IndexError, "positions in"),
        ([[1, 1]], [[1.0, 0.5]], ["q"], ValueError, "appears twice"),
        ([[0], [1]], [[1.0], [0.5]], ["q", "q"], ValueError, "distinct"),
        ([[0, 1]], [[1.0, np.nan]], ["q"], ValueError, "NaN"),
    ],
)
def test_run_from_results_rejects_bad_input(
    ids: list[list[float]],
    scores: list[list[float]],
    query_ids: list[str],
    error: type[Exception],
    message: str,
) -> None:
    with pytest.raises(error, match=message):
        run_from_results(np.array(ids), np.array(scores), query_ids, ["d0", "d1", "d2"])
