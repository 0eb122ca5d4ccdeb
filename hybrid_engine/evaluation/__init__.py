"""Evaluation harness: load BEIR-layout test collections and score runs with trec_eval metrics."""

from hybrid_engine.evaluation.datasets import (
    Dataset,
    DatasetError,
    available_splits,
    load_beir,
    load_corpus,
    load_qrels,
    load_queries,
    read_corpus,
    sample_queries,
)
from hybrid_engine.evaluation.metrics import (
    SUPPORTED_METRICS,
    EvalResult,
    evaluate,
    parse_metric,
    run_from_results,
)

__all__ = [
    "SUPPORTED_METRICS",
    "Dataset",
    "DatasetError",
    "EvalResult",
    "available_splits",
    "evaluate",
    "load_beir",
    "load_corpus",
    "load_qrels",
    "load_queries",
    "parse_metric",
    "read_corpus",
    "run_from_results",
    "sample_queries",
]
