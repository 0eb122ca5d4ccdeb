"""HyDE (Gao et al. 2022): the dense leg searches the mean of the normalised embeddings of
the query and of passages a generator wrote for it; BM25 and SPLADE search the query."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hybrid_engine.checks import check_int, check_queries
from hybrid_engine.dense.encoding import DOCUMENT, QUERY, sided
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD
from hybrid_engine.pipeline.result import HybridResult
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH
from hybrid_engine.result import SearchResult
from hybrid_engine.strategies.parsing import passage
from hybrid_engine.strategies.prompts import PROMPTS, Prompts
from hybrid_engine.strategies.result import (
    Generate,
    QueryTrace,
    StrategyResult,
    run_per_query,
)


def hyde_vector(engine: HybridIndex, query: str, passages: Sequence[str]) -> np.ndarray:
    """float32 ``(dim,)``: the mean of the L2-normalised embeddings of ``query`` (as a query)
    and ``passages`` (as documents) by ``engine``'s encoder.

    Raises
    ------
    ValueError
        The engine has no dense leg.
    """
    encoder = engine.encoder
    if encoder is None:
        raise ValueError("HyDE needs the dense leg; build with retrievers=('bm25', 'dense')")
    rows = [sided(encoder, QUERY).encode([query])]  # passages are hypothetical documents
    if passages:
        rows.append(sided(encoder, DOCUMENT).encode(list(passages)))
    vectors = np.concatenate(rows).astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).mean(axis=0).astype(np.float32)


def _search(
    engine: HybridIndex, query: str, passages: list[str], k: int, fusion: str, depth: int
) -> HybridResult:
    """The hybrid search of ``query`` whose dense leg searches its HyDE vector."""
    vector = hyde_vector(engine, query, passages)[None, :] if query.strip() else None
    return engine.search([query], k, fusion=fusion, depth=depth, query_vectors=vector)


def hyde(
    engine: HybridIndex,
    queries: str | Sequence[str],
    generate: Generate,
    k: int = 10,
    *,
    num_passages: int = 1,
    prompts: Prompts = PROMPTS,
    fusion: str = DEFAULT_METHOD,
    depth: int = DEFAULT_DEPTH,
) -> StrategyResult:
    """Search each query with HyDE.

    Parameters
    ----------
    engine : HybridIndex
        With a dense leg.
    queries : str or sequence of str
        A blank query gets no hits and no generation.
    generate : callable str -> str
        Called ``num_passages`` times per query with ``prompts.hyde``.
    k : int
        Hits per query.
    num_passages : int
        Passages generated per query, >= 1 (more than one only differs with a sampling
        generator). Passages that parse to nothing are dropped; with none left, the dense
        leg searches the query's own embedding (the plain hybrid search).
    prompts : Prompts
        ``prompts.hyde`` is used.
    fusion, depth
        As in ``HybridIndex.search``.

    Returns
    -------
    StrategyResult
        ``generated["hyde"]``: ``{"raw": [...], "passages": [...]}``; one step, ``"query"``.
    """
    texts = check_queries(queries)
    num_passages = check_int("num_passages", num_passages, 1)

    def search_one(engine: HybridIndex, query: str, trace: QueryTrace) -> SearchResult:
        raw: list[str] = []
        if query.strip():
            prompt = prompts.hyde.format(question=query)
            raw = [trace.timed("hyde.generation", generate, prompt) for _ in range(num_passages)]
        passages = [p for p in map(passage, raw) if p]
        trace.generated["hyde"] = {"raw": raw, "passages": passages}
        return trace.search(
            "hyde", "query", query, _search, engine, query, passages, k, fusion, depth
        )

    return run_per_query(engine, texts, search_one, k)
