"""Scoring a built searcher on a dataset: its metrics (pytrec_eval), throughput and per-query
latency."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hybrid_engine.evaluation.datasets import Dataset
from hybrid_engine.evaluation.metrics import EvalResult, evaluate, parse_metric, run_from_results
from hybrid_engine.result import SearchResult

DEFAULT_METRICS = ("ndcg@10", "recall@100", "mrr@10", "map@100", "hit_rate@1", "hit_rate@5")
"""Metrics of ``hybrid-engine eval``; the run is retrieved to the deepest cutoff."""

Searcher = Callable[[Sequence[str], int], SearchResult]
"""``search(queries, k)``: what is scored."""


@dataclass(frozen=True)
class RetrieverReport:
    """Quality and speed of one retriever on one dataset.

    Attributes
    ----------
    metrics : dict of str to float
        Mean of each metric over the judged queries.
    queries_per_s : float
        Queries answered per second, the whole query set as one batch, analysis included.
    build_s : float
        Seconds to index the corpus.
    latency_ms : dict of str to tuple of float
        Median and 95th percentile milliseconds of one query per call, top 10, from text:
        ``"total"`` (wall clock around the call) and, for retrievers whose results carry
        per-stage ``timings`` (``HybridResult``), each stage.
    per_query : dict of str to dict of str to float
        Each judged query's value of each metric, by query id (paired comparisons of
        retrievers on the same queries: ``pick``'s choice).
    """

    metrics: dict[str, float]
    queries_per_s: float
    build_s: float
    latency_ms: dict[str, tuple[float, float]]
    per_query: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict[str, float]:
        """The JSON shape of ``hybrid-engine eval``: metrics, ``queries_per_s``, ``p50_ms``,
        ``p95_ms`` (whole call), then ``<stage>_p50_ms`` and ``<stage>_p95_ms`` per stage."""
        row = {**self.metrics, "queries_per_s": self.queries_per_s}
        for stage, (p50, p95) in self.latency_ms.items():
            prefix = "" if stage == "total" else f"{stage}_"
            row[f"{prefix}p50_ms"] = p50
            row[f"{prefix}p95_ms"] = p95
        return row


def query_latency(
    search: Searcher, queries: Sequence[str], k: int = 10
) -> dict[str, tuple[float, float]]:
    """Median and 95th percentile milliseconds of ``search([query], k)`` over ``queries``
    (after a warm-up query).

    Returns
    -------
    dict of str to (float, float)
        ``"total"``: the wall clock around each call; then every stage the results report in
        a ``timings`` attribute (``HybridResult``), except its own ``"total"``.
    """
    search(list(queries[:1]), k)
    times: dict[str, list[float]] = {"total": []}
    for query in queries:
        start = time.perf_counter()
        result = search([query], k)
        times["total"].append((time.perf_counter() - start) * 1000)
        for stage, ms in getattr(result, "timings", {}).items():
            if stage != "total":
                times.setdefault(stage, []).append(ms)
    return {
        stage: (float(np.percentile(ms, 50)), float(np.percentile(ms, 95)))
        for stage, ms in times.items()
    }


def score_searcher(
    dataset: Dataset,
    search: Searcher,
    doc_ids: Sequence[str],
    *,
    metrics: Sequence[str] = DEFAULT_METRICS,
) -> tuple[EvalResult, float]:
    """Search all of ``dataset``'s queries as one batch and score the run.

    Returns the mean and per-query value of each metric and the queries answered per second
    (analysis included, after one warm-up query so JIT compilation is not counted).
    """
    depth = max(parse_metric(m)[1] for m in metrics)
    query_ids = list(dataset.queries)
    texts = [dataset.queries[q] for q in query_ids]
    search(texts[:1], depth)
    start = time.perf_counter()
    result = search(texts, depth)
    elapsed = time.perf_counter() - start
    run = run_from_results(result.ids, result.scores, query_ids, doc_ids)
    scores = evaluate(run, dataset.qrels, metrics, per_query=True)
    return scores, len(texts) / max(elapsed, 1e-9)


def evaluate_searcher(
    dataset: Dataset,
    search: Searcher,
    doc_ids: Sequence[str],
    *,
    build_s: float = 0.0,
    metrics: Sequence[str] = DEFAULT_METRICS,
) -> RetrieverReport:
    """Score an already built ``search`` on all of ``dataset``'s queries (``score_searcher``)
    and time it one query per call (``query_latency``).

    For a caller that built its retrievers itself, say one ``HybridIndex`` whose legs are
    scored on their own and fused (the demo); ``build_s`` is reported as given.

    Raises
    ------
    ValueError
        An unknown metric name.
    """
    scores, queries_per_s = score_searcher(dataset, search, doc_ids, metrics=metrics)
    latency = query_latency(search, list(dataset.queries.values()))
    return RetrieverReport(scores.mean, queries_per_s, build_s, latency, scores.per_query)
