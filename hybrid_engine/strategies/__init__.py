"""Query strategies that need a text generator: HyDE, decomposition, multi-hop, self-query,
and the fusion of several of them (docs/strategies.md)."""

from hybrid_engine.strategies.combine import (
    DEFAULT_STRATEGIES,
    STRATEGIES,
    fuse_strategies,
    plain_search,
)
from hybrid_engine.strategies.decompose import decompose
from hybrid_engine.strategies.hyde import hyde, hyde_vector
from hybrid_engine.strategies.multi_hop import STOP, multi_hop
from hybrid_engine.strategies.prompts import PROMPTS, Prompts
from hybrid_engine.strategies.result import Generate, QueryTrace, Step, StrategyResult
from hybrid_engine.strategies.schema import MetadataSchema, SchemaField
from hybrid_engine.strategies.self_query import (
    ProposedFilter,
    SelfQueryWarning,
    self_query,
    validate_filter,
)

__all__ = [
    "DEFAULT_STRATEGIES",
    "PROMPTS",
    "STOP",
    "STRATEGIES",
    "Generate",
    "MetadataSchema",
    "Prompts",
    "ProposedFilter",
    "QueryTrace",
    "SchemaField",
    "SelfQueryWarning",
    "Step",
    "StrategyResult",
    "decompose",
    "fuse_strategies",
    "hyde",
    "hyde_vector",
    "multi_hop",
    "plain_search",
    "self_query",
    "validate_filter",
]
