"""Learned-sparse retrieval: SPLADE vectors as quantized impacts in an inverted index."""

from hybrid_engine.results import SparseVectors
from hybrid_engine.sparse.index import SpladeIndex

__all__ = ["SparseVectors", "SpladeIndex"]
