"""Fusion of several strategies' rankings (and the plain hybrid search's), query by query."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from hybrid_engine.checks import check_queries
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.pipeline.fusion import fuse
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH
from hybrid_engine.result import SearchResult
from hybrid_engine.strategies.decompose import decompose
from hybrid_engine.strategies.hyde import hyde
from hybrid_engine.strategies.multi_hop import multi_hop
from hybrid_engine.strategies.prompts import PROMPTS, Prompts
from hybrid_engine.strategies.result import (
    Generate,
    QueryTrace,
    StrategyResult,
    assemble,
    run_per_query,
)
from hybrid_engine.strategies.schema import MetadataSchema
from hybrid_engine.strategies.self_query import self_query

STRATEGIES = ("hybrid", "hyde", "decompose", "multi-hop", "self-query")
"""Strategies ``fuse_strategies`` combines (``"hybrid"``: the plain ``HybridIndex.search``)."""
DEFAULT_STRATEGIES = ("hybrid", "hyde", "decompose", "multi-hop")
"""``fuse_strategies``' default (self-query needs a schema)."""

Runner = Callable[[list[str], int], StrategyResult]


def plain_search(engine: HybridIndex, queries: Sequence[str], depth: int) -> StrategyResult:
    """The ``"hybrid"`` strategy: ``engine.search`` of each query alone (as every strategy
    searches), top ``depth``, traced and timed like the others."""

    def search_one(engine: HybridIndex, query: str, trace: QueryTrace) -> SearchResult:
        return trace.search("hybrid", "query", query, engine.search, [query], depth, depth=depth)

    return run_per_query(engine, queries, search_one, depth)


def fuse_strategies(
    engine: HybridIndex,
    queries: str | Sequence[str],
    generate: Generate,
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    method: str = "rrf",
    k: int = 10,
    *,
    schema: MetadataSchema | None = None,
    prompts: Prompts = PROMPTS,
    depth: int = DEFAULT_DEPTH,
) -> StrategyResult:
    """Run each of ``strategies`` to ``depth`` hits and fuse their rankings (``fuse``).

    Parameters
    ----------
    engine : HybridIndex
    queries : str or sequence of str
    generate : callable str -> str
        Shared by every strategy.
    strategies : sequence of str
        Distinct names from ``STRATEGIES``, at least one.
    method : str
        ``fuse``'s method: ``"rrf"`` (default) or a score fusion (``"dbsf"``, ...).
    k : int
        Hits per query.
    schema : MetadataSchema, optional
        Needed for ``"self-query"``.
    prompts : Prompts
        Every strategy's prompts.
    depth : int
        Hits of each strategy's ranking fused.

    Returns
    -------
    StrategyResult
        Each query's trace holds every strategy's steps, generations and timings.

    Raises
    ------
    ValueError
        An unknown or repeated strategy, none, or ``"self-query"`` without ``schema``.
    """
    names = list(strategies)
    unknown = [name for name in names if name not in STRATEGIES]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(f"strategies must be distinct names from {STRATEGIES}, got {names}")
    if "self-query" in names and schema is None:
        raise ValueError("the self-query strategy needs schema=MetadataSchema(...)")
    start = time.perf_counter()
    texts = check_queries(queries)
    engine = engine.pinned()  # every strategy on one commit: their positions are fused
    runners: dict[str, Runner] = {
        "hybrid": lambda q, n: plain_search(engine, q, n),
        "hyde": lambda q, n: hyde(engine, q, generate, n, prompts=prompts, depth=n),
        "decompose": lambda q, n: decompose(engine, q, generate, n, prompts=prompts, depth=n),
        "multi-hop": lambda q, n: multi_hop(engine, q, generate, n, prompts=prompts, depth=n),
    }
    if schema is not None:
        runners["self-query"] = lambda q, n: self_query(
            engine, q, generate, schema, n, prompts=prompts, depth=n
        )
    results = [runners[name](texts, depth) for name in names]
    traces = []
    rows = []
    for i, query in enumerate(texts):
        trace = QueryTrace(query)
        for result in results:
            trace.absorb(result.traces[i])
        lists = [SearchResult(r.ids[i : i + 1], r.scores[i : i + 1]) for r in results]
        rows.append(trace.timed("fused.fusion", fuse, lists, k, method=method, depth=depth))
        traces.append(trace)
    return assemble(rows, traces, results[0], (time.perf_counter() - start) * 1000)
