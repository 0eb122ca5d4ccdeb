"""Ranking metrics with cutoffs, defined and ordered exactly as trec_eval computes them.

A *run* maps query id to ``{doc id: score}`` (the pytrec_eval format); *qrels* map query id to
``{doc id: grade}``. Each query's documents are ranked by score descending, ties broken by doc id
descending (plain string comparison): trec_eval's order, so equal scores rank the same here and
there. A document is relevant when its grade is at least 1.

Metrics, each written ``name@k`` for a positive cutoff ``k``:

``ndcg@k``
    trec_eval ``ndcg_cut``: gain = grade (negative grades gain 0), discount ``log2(rank + 1)``,
    normalised by the ideal ranking of all judged documents with grade > 0.
``recall@k``
    trec_eval ``recall_k``: relevant documents in the top k over all relevant documents.
``mrr@k``
    Reciprocal rank of the first relevant document in the top k, 0 if none (trec_eval
    ``recip_rank`` on the run cut at k; ``recip_rank`` itself has no cutoff).
``map@k``
    trec_eval ``map_cut``: the sum of precision at the rank of each relevant document in the top
    k, over all relevant documents.
``hit_rate@k``
    trec_eval ``success``: 1 if any relevant document is in the top k, else 0.

Which queries are averaged: every query of the qrels with at least one relevant document.
Queries the run leaves out score 0 on every metric (trec_eval skips them unless given ``-c``;
skipping would reward a system for failing to answer). Queries whose judgments hold no relevant
document are left out of the average and of the per-query results, since every metric is 0 or
undefined for them. Queries of the run that the qrels do not judge are ignored.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, overload

import numpy as np

__all__ = ["SUPPORTED_METRICS", "EvalResult", "evaluate", "parse_metric", "run_from_results"]

Run = Mapping[str, Mapping[str, float]]
Qrels = Mapping[str, Mapping[str, int]]

_DEFAULT_METRICS = ("ndcg@10", "recall@100", "mrr@10", "map@100")


def _ndcg(grades: list[int], k: int, ideal: list[int], n_relevant: int) -> float:
    gain = sum(grade / math.log2(rank + 2) for rank, grade in enumerate(grades[:k]) if grade > 0)
    ideal_gain = sum(grade / math.log2(rank + 2) for rank, grade in enumerate(ideal[:k]))
    return gain / ideal_gain


def _recall(grades: list[int], k: int, ideal: list[int], n_relevant: int) -> float:
    return sum(1 for grade in grades[:k] if grade >= 1) / n_relevant


def _mrr(grades: list[int], k: int, ideal: list[int], n_relevant: int) -> float:
    for rank, grade in enumerate(grades[:k], start=1):
        if grade >= 1:
            return 1.0 / rank
    return 0.0


def _map(grades: list[int], k: int, ideal: list[int], n_relevant: int) -> float:
    hits = 0
    precision_sum = 0.0
    for rank, grade in enumerate(grades[:k], start=1):
        if grade >= 1:
            hits += 1
            precision_sum += hits / rank
    return precision_sum / n_relevant


def _hit_rate(grades: list[int], k: int, ideal: list[int], n_relevant: int) -> float:
    return 1.0 if any(grade >= 1 for grade in grades[:k]) else 0.0


_MetricFunction = Callable[[list[int], int, list[int], int], float]
_METRICS: dict[str, _MetricFunction] = {
    "ndcg": _ndcg,
    "recall": _recall,
    "mrr": _mrr,
    "map": _map,
    "hit_rate": _hit_rate,
}
SUPPORTED_METRICS: tuple[str, ...] = tuple(_METRICS)
"""Metric names accepted before ``@k`` in :func:`evaluate`."""


@dataclass(frozen=True)
class EvalResult:
    """Mean and per-query metric values, as returned by ``evaluate(..., per_query=True)``.

    Attributes
    ----------
    mean : dict of str to float
        Metric name (as requested, e.g. ``"ndcg@10"``) to its mean over the evaluated queries.
    per_query : dict of str to dict of str to float
        Query id to ``{metric name: value}`` for every evaluated query (judged with at least one
        relevant document), in qrels order; the same nesting as pytrec_eval's output.
    """

    mean: dict[str, float]
    per_query: dict[str, dict[str, float]]


def parse_metric(name: str) -> tuple[str, int]:
    """Split a metric name into its kind and cutoff: ``"ndcg@10"`` -> ``("ndcg", 10)``.

    Parameters
    ----------
    name : str
        ``<kind>@<k>`` with ``kind`` one of :data:`SUPPORTED_METRICS` and ``k`` a positive integer.

    Returns
    -------
    tuple of (str, int)
        The kind and the cutoff.

    Raises
    ------
    ValueError
        If the kind is unknown or the cutoff is not a positive integer.
    """
    kind, separator, cutoff = name.partition("@")
    if kind in _METRICS and separator and cutoff.isdigit() and cutoff.isascii() and int(cutoff):
        return kind, int(cutoff)
    raise ValueError(
        f"unknown metric {name!r}: expected '<name>@<k>' with name one of "
        f"{', '.join(SUPPORTED_METRICS)} and k a positive integer, e.g. 'ndcg@10'"
    )


@overload
def evaluate(
    run: Run,
    qrels: Qrels,
    metrics: Collection[str] = ...,
    *,
    per_query: Literal[False] = ...,
) -> dict[str, float]: ...


@overload
def evaluate(
    run: Run,
    qrels: Qrels,
    metrics: Collection[str] = ...,
    *,
    per_query: Literal[True],
) -> EvalResult: ...


def evaluate(
    run: Run,
    qrels: Qrels,
    metrics: Collection[str] = _DEFAULT_METRICS,
    *,
    per_query: bool = False,
) -> dict[str, float] | EvalResult:
    """Score a run against relevance judgments.

    See the module docstring for the metric definitions, the ranking order (score descending,
    ties by doc id descending, as trec_eval) and which queries are averaged.

    Parameters
    ----------
    run : mapping of str to mapping of str to float
        Query id to ``{doc id: score}``; higher scores rank first. Need not be sorted.
    qrels : mapping of str to mapping of str to int
        Query id to ``{doc id: grade}``; grade >= 1 is relevant.
    metrics : collection of str, default ("ndcg@10", "recall@100", "mrr@10", "map@100")
        Metric names, see :func:`parse_metric`.
    per_query : bool, default False
        Return an :class:`EvalResult` with the per-query values as well as the means.

    Returns
    -------
    dict of str to float or EvalResult
        Metric name to mean value; an :class:`EvalResult` when ``per_query`` is true.

    Raises
    ------
    ValueError
        If a metric name is unknown, a score is NaN, or no query of the qrels has a relevant
        document.
    TypeError
        If ``metrics`` is a single string rather than a collection of names.

    Notes
    -----
    Pure Python; costs O(n log k) per query for n scored documents and the largest cutoff k.
    Thread-safe: reads its arguments only.
    """
    if isinstance(metrics, str):
        raise TypeError(f"metrics must be a collection of names, e.g. ({metrics!r},), not a str")
    parsed = {name: parse_metric(name) for name in metrics}
    depth = max((k for _, k in parsed.values()), default=0)
    values: dict[str, dict[str, float]] = {}
    for query_id, judged in qrels.items():
        ideal = sorted((grade for grade in judged.values() if grade > 0), reverse=True)
        if not ideal:
            continue
        grades = [judged.get(doc_id, 0) for doc_id in _top_documents(run.get(query_id, {}), depth)]
        values[query_id] = {
            name: _METRICS[kind](grades, k, ideal, len(ideal)) for name, (kind, k) in parsed.items()
        }
    if not values:
        raise ValueError("qrels hold no query with a relevant document (grade >= 1)")
    mean = {name: math.fsum(row[name] for row in values.values()) / len(values) for name in parsed}
    return EvalResult(mean=mean, per_query=values) if per_query else mean


def _top_documents(scores: Mapping[str, float], depth: int) -> list[str]:
    """The ``depth`` best doc ids in trec_eval order: score descending, then doc id descending."""
    if any(math.isnan(score) for score in scores.values()):
        raise ValueError("run scores must not be NaN: NaN has no place in a ranking")
    best = heapq.nlargest(depth, scores.items(), key=lambda item: (item[1], item[0]))
    return [doc_id for doc_id, _ in best]


def run_from_results(
    ids: np.ndarray,
    scores: np.ndarray,
    query_ids: Sequence[str],
    doc_ids: Sequence[str],
) -> dict[str, dict[str, float]]:
    """Turn a batch search result into a run for :func:`evaluate`.

    Parameters
    ----------
    ids : numpy.ndarray of int, shape (n_queries, k)
        Positions into ``doc_ids`` (the corpus order); ``-1`` marks padding and is skipped.
    scores : numpy.ndarray of float, shape (n_queries, k)
        The score of each hit (float32 from the engine; converted exactly to Python floats).
    query_ids : sequence of str, length n_queries
        The id of each query (row), all distinct.
    doc_ids : sequence of str
        The id of each corpus position.

    Returns
    -------
    dict of str to dict of str to float
        Query id to ``{doc id: score}`` in row order; a row of padding gives an empty dict.

    Raises
    ------
    ValueError
        If shapes disagree, ``ids`` is not integer, a position repeats within a row, a query id
        repeats, or a non-padding score is NaN.
    IndexError
        If a position is below -1 or not less than ``len(doc_ids)``.
    """
    ids = np.asarray(ids)
    scores = np.asarray(scores)
    if ids.ndim != 2 or ids.shape != scores.shape or ids.shape[0] != len(query_ids):
        raise ValueError(
            f"expected ids and scores of shape (n_queries={len(query_ids)}, k), "
            f"got ids {ids.shape} and scores {scores.shape}"
        )
    if not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"ids must be an integer array (int64 positions), got dtype {ids.dtype}")
    if len(set(query_ids)) != len(query_ids):
        raise ValueError("query_ids must be distinct: a run holds one ranking per query")
    valid = ids >= 0
    if ids.size and (ids.min() < -1 or ids.max() >= len(doc_ids)):
        raise IndexError(
            f"ids must be -1 (padding) or positions in [0, {len(doc_ids)}), "
            f"got values in [{ids.min()}, {ids.max()}]"
        )
    if np.isnan(scores[valid]).any():
        raise ValueError("scores of non-padding hits must not be NaN")
    run: dict[str, dict[str, float]] = {}
    for query_id, row_ids, row_scores, row_valid in zip(query_ids, ids, scores, valid, strict=True):
        positions = row_ids[row_valid].tolist()
        if len(set(positions)) != len(positions):
            raise ValueError(f"query {query_id!r}: a document appears twice in its result row")
        run[query_id] = dict(
            zip((doc_ids[p] for p in positions), row_scores[row_valid].tolist(), strict=True)
        )
    return run
