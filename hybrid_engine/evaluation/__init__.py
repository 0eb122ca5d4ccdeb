"""Evaluation harness: load BEIR-layout test collections and score runs with trec_eval metrics."""

from hybrid_engine.evaluation.datasets import (
    Dataset,
    DatasetError,
    available_splits,
    load_beir,
    load_corpus,
    load_qrels,
    load_queries,
)

__all__ = [
    "Dataset",
    "DatasetError",
    "available_splits",
    "load_beir",
    "load_corpus",
    "load_qrels",
    "load_queries",
]
