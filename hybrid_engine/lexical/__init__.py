"""Lexical retrieval: text analysis, the BM25 index and its numba scoring kernels."""

from hybrid_engine.lexical.analysis import Analyzer, AnalyzerConfig
from hybrid_engine.lexical.index import BM25Index, BM25Params
from hybrid_engine.lexical.statistics import CollectionStats

__all__ = ["Analyzer", "AnalyzerConfig", "BM25Index", "BM25Params", "CollectionStats"]
