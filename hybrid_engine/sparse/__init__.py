"""Learned-sparse retrieval: SPLADE vectors as quantized impacts in an inverted index."""

from hybrid_engine.result import SparseVectors
from hybrid_engine.sparse.index import SpladeIndex

__all__ = ["SparseVectors", "SpladeIndex"]
