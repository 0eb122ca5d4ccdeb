"""The hybrid pipeline: fusion of retrievers, reranking, MMR, and the engine composing them."""

from hybrid_engine.pipeline.degradation import DegradedWarning
from hybrid_engine.pipeline.engine import HybridIndex
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD, fuse
from hybrid_engine.pipeline.mmr import mmr
from hybrid_engine.pipeline.plan import SEARCH_OPTIONS
from hybrid_engine.pipeline.rerank import RERANK_DEPTH, rerank
from hybrid_engine.pipeline.result import HybridResult
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH, Stack

__all__ = [
    "DEFAULT_DEPTH",
    "DEFAULT_METHOD",
    "RERANK_DEPTH",
    "SEARCH_OPTIONS",
    "DegradedWarning",
    "HybridIndex",
    "HybridResult",
    "Stack",
    "fuse",
    "mmr",
    "rerank",
]
