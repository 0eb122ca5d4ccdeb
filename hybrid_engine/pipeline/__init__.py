"""The query stages one search runs: legs, the checked plan, fusion, rescoring, rerank, MMR,
budgets and degradation, and the result they produce. The engine running them (``HybridIndex``)
is in ``hybrid_engine.engine``; its old name here still answers, with a DeprecationWarning."""

from hybrid_engine._moved import moved_name
from hybrid_engine.pipeline.degradation import DegradedWarning
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
    "HybridResult",
    "Stack",
    "fuse",
    "mmr",
    "rerank",
]


def __getattr__(name: str) -> object:
    """Names this package exported before they moved (``_moved.MOVED_NAMES``)."""
    return moved_name(__name__, name)
