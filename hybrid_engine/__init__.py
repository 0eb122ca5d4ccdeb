"""hybrid_engine: embedded, CPU-only hybrid retrieval."""

from hybrid_engine._version import __version__
from hybrid_engine.analysis import Analyzer, AnalyzerConfig
from hybrid_engine.bm25 import BM25Index, BM25Params
from hybrid_engine.cross_encoder import CrossEncoder
from hybrid_engine.dense import DenseIndex
from hybrid_engine.embedding_cache import EmbeddingCache
from hybrid_engine.encoder import Encoder
from hybrid_engine.errors import HybridEngineError, IndexFormatError
from hybrid_engine.fusion import fuse
from hybrid_engine.hybrid import HybridIndex, HybridResult
from hybrid_engine.mmr import mmr
from hybrid_engine.model_store import ModelNotFoundError
from hybrid_engine.rerank import rerank
from hybrid_engine.results import PAD_ID, SearchResult
from hybrid_engine.splade import SpladeIndex
from hybrid_engine.splade_encoder import SparseVectors, SpladeEncoder

__all__ = [
    "PAD_ID",
    "Analyzer",
    "AnalyzerConfig",
    "BM25Index",
    "BM25Params",
    "CrossEncoder",
    "DenseIndex",
    "EmbeddingCache",
    "Encoder",
    "HybridEngineError",
    "HybridIndex",
    "HybridResult",
    "IndexFormatError",
    "ModelNotFoundError",
    "SearchResult",
    "SparseVectors",
    "SpladeEncoder",
    "SpladeIndex",
    "__version__",
    "fuse",
    "mmr",
    "rerank",
]
