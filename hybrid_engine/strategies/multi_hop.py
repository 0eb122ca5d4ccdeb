"""Multi-hop retrieval: retrieve, ask the generator what is still missing, retrieve that,
until it says the evidence is enough or the hops run out; the hops' rankings are fused."""

from __future__ import annotations

from collections.abc import Sequence

from hybrid_engine.checks import check_int, check_queries
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD, fuse
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH
from hybrid_engine.result import Hit, SearchResult
from hybrid_engine.strategies.parsing import follow_up
from hybrid_engine.strategies.prompts import PROMPTS, Prompts
from hybrid_engine.strategies.result import (
    Generate,
    QueryTrace,
    StrategyResult,
    run_per_query,
)

STOP = "ENOUGH"
"""The word by which the generator says the passages answer the question."""


def passages_block(hits: Sequence[Hit], max_chars: int) -> str:
    """The prompt's numbered passages: each hit's title and text, at most ``max_chars``."""
    lines = []
    for i, hit in enumerate(hits, 1):
        body = " ".join(f"{hit.title} {hit.text}".split())
        lines.append(f"{i}. {body[:max_chars]}")
    return "\n".join(lines)


def multi_hop(
    engine: HybridIndex,
    queries: str | Sequence[str],
    generate: Generate,
    k: int = 10,
    *,
    max_hops: int = 2,
    passages: int = 3,
    passage_chars: int = 300,
    stop: str = STOP,
    method: str = "rrf",
    prompts: Prompts = PROMPTS,
    fusion: str = DEFAULT_METHOD,
    depth: int = DEFAULT_DEPTH,
) -> StrategyResult:
    """Search each query in up to ``max_hops`` hops.

    Hop 0 searches the query. Before each further hop the generator reads the question and
    the previous hop's top ``passages`` (``prompts.multi_hop``) and writes a follow-up query,
    which the hop searches, or ``stop``: then, or when the follow-up is empty or repeats an
    earlier hop's query, the hops end.

    Parameters
    ----------
    engine : HybridIndex
    queries : str or sequence of str
        A blank query gets no hits and no generation.
    generate : callable str -> str
        Called at most ``max_hops - 1`` times per query.
    k : int
        Hits per query.
    max_hops : int
        Searches per query at most, the query's own included, >= 1 (1: the plain search).
    passages, passage_chars : int
        Hits shown to the generator, and characters of each (title and text).
    stop : str
        The stop word (first word of the output, any case).
    method : str
        ``fuse``'s method merging the hops' top ``depth`` (default RRF).
    prompts : Prompts
        ``prompts.multi_hop`` is used.
    fusion, depth
        As in ``HybridIndex.search``.

    Returns
    -------
    StrategyResult
        ``generated["multi-hop"]``: ``{"raw": [...], "follow_ups": [...], "stopped":
        bool}`` (``stopped``: the generator said ``stop`` before the hops ran out); steps
        ``"hop-0"``, ``"hop-1"``, ...
    """
    texts = check_queries(queries)
    max_hops = check_int("max_hops", max_hops, 1)

    def search_one(engine: HybridIndex, query: str, trace: QueryTrace) -> SearchResult:
        record: dict[str, object] = {"raw": [], "follow_ups": [], "stopped": False}
        trace.generated["multi-hop"] = record
        asked = [query]
        lists: list[SearchResult] = []
        while True:
            text = asked[-1]
            label = f"hop-{len(lists)}"
            hits = trace.search(
                "multi-hop", label, text, engine.search, [text], depth, fusion=fusion, depth=depth
            )
            lists.append(hits)
            if len(lists) == max_hops or not query.strip():
                break
            prompt = prompts.multi_hop.format(
                question=query,
                passages=passages_block(hits.hits()[0][:passages], passage_chars),
                stop=stop,
            )
            raw = trace.timed("multi-hop.generation", generate, prompt)
            record["raw"].append(raw)  # type: ignore[attr-defined]
            follow = follow_up(raw, stop)
            if follow is None or follow.lower() in (a.lower() for a in asked):
                record["stopped"] = follow is None
                break
            record["follow_ups"].append(follow)  # type: ignore[attr-defined]
            asked.append(follow)
        return trace.timed("multi-hop.fusion", fuse, lists, k, method=method, depth=depth)

    return run_per_query(engine, texts, search_one, k)
