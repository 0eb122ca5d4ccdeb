"""The hybrid pipeline: fusion of retrievers, reranking, MMR, and the engine composing them."""

from hybrid_engine.pipeline.degradation import DegradedWarning
from hybrid_engine.pipeline.engine import HybridIndex
from hybrid_engine.pipeline.fusion import fuse
from hybrid_engine.pipeline.mmr import mmr
from hybrid_engine.pipeline.rerank import rerank
from hybrid_engine.pipeline.result import HybridResult
from hybrid_engine.pipeline.stack import Stack

__all__ = ["DegradedWarning", "HybridIndex", "HybridResult", "Stack", "fuse", "mmr", "rerank"]
