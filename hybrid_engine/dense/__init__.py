"""Dense retrieval: document vectors searched exactly or through an HNSW graph, and the disk
cache of text embeddings."""

from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.dense.index import DenseIndex

__all__ = ["DenseIndex", "EmbeddingCache"]
