"""Query decomposition: a generator splits a question into sub-queries, each is searched by
the engine, and their rankings are fused."""

from __future__ import annotations

from collections.abc import Sequence

from hybrid_engine.checks import check_int, check_queries
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD, fuse
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH
from hybrid_engine.result import SearchResult
from hybrid_engine.strategies.parsing import clean_lines
from hybrid_engine.strategies.prompts import PROMPTS, Prompts
from hybrid_engine.strategies.result import (
    Generate,
    QueryTrace,
    StrategyResult,
    run_per_query,
)


def subqueries(query: str, output: str, max_subqueries: int) -> list[str]:
    """The query, then at most ``max_subqueries`` distinct generated lines of ``output``
    that differ from it (case and spacing ignored)."""
    lines = [
        line
        for line in clean_lines(output)
        if " ".join(line.lower().split()) != " ".join(query.lower().split())
    ]
    return [query, *lines[:max_subqueries]]


def decompose(
    engine: HybridIndex,
    queries: str | Sequence[str],
    generate: Generate,
    k: int = 10,
    *,
    max_subqueries: int = 3,
    method: str = "rrf",
    prompts: Prompts = PROMPTS,
    fusion: str = DEFAULT_METHOD,
    depth: int = DEFAULT_DEPTH,
) -> StrategyResult:
    """Search each query as the fusion of its sub-queries' searches.

    Parameters
    ----------
    engine : HybridIndex
    queries : str or sequence of str
        A blank query gets no hits and no generation.
    generate : callable str -> str
        Called once per query with ``prompts.decompose``.
    k : int
        Hits per query.
    max_subqueries : int
        Generated sub-queries kept, >= 0; the original query is always searched too.
    method : str
        ``fuse``'s method merging the sub-queries' top ``depth`` (default RRF).
    prompts : Prompts
        ``prompts.decompose`` is used.
    fusion, depth
        As in ``HybridIndex.search`` (each sub-query's own hybrid fusion).

    Returns
    -------
    StrategyResult
        ``generated["decompose"]``: ``{"raw": str, "subqueries": [...]}`` (the query first);
        steps ``"subquery-0"`` (the query), ``"subquery-1"``, ...
    """
    texts = check_queries(queries)
    max_subqueries = check_int("max_subqueries", max_subqueries, 0)

    def search_one(engine: HybridIndex, query: str, trace: QueryTrace) -> SearchResult:
        raw = ""
        if query.strip() and max_subqueries:
            prompt = prompts.decompose.format(question=query)
            raw = trace.timed("decompose.generation", generate, prompt)
        asked = subqueries(query, raw, max_subqueries)
        trace.generated["decompose"] = {"raw": raw, "subqueries": asked}
        lists: list[SearchResult] = []
        for i, text in enumerate(asked):
            hits = trace.search(
                "decompose",
                f"subquery-{i}",
                text,
                engine.search,
                [text],
                depth,
                fusion=fusion,
                depth=depth,
            )
            lists.append(hits)
        return trace.timed("decompose.fusion", fuse, lists, k, method=method, depth=depth)

    return run_per_query(engine, texts, search_one, k)
