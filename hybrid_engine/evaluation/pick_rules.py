"""The rule-based stack of ``pick`` for a collection without judged queries: a few rules over
corpus statistics (``corpus_stats``), stated as rules, never as measurements."""

from __future__ import annotations

from hybrid_engine.dense.params import DEFAULT_EXACT_THRESHOLD
from hybrid_engine.evaluation.corpus_stats import CorpusStatistics
from hybrid_engine.evaluation.pick_report import PickReport
from hybrid_engine.pipeline.rerank import RERANK_DEPTH
from hybrid_engine.pipeline.stack import Stack

IDENTIFIER_SHARE = 0.05
"""An identifier share (``corpus_stats.IDENTIFIER``) from which the corpus is one of codes:
dense-only is refused and the hybrid weighs BM25 double."""
BM25_WEIGHT = 2.0
"""BM25's fusion weight against dense's 1.0 in an identifier-heavy corpus."""
LONG_DOCUMENT_TOKENS = 190
"""Median tokens per document above which the bi-encoder (256 word pieces, about 190 words)
reads only the beginning of most documents: chunking is advised."""
BM25_ONLY_BUDGET_MS = 5.0
"""A budget under which only BM25 fits: encoding one query with the int8 MiniLM bi-encoder
takes about 3-6 ms on 2 cores (docs/pick.md)."""
RERANK_BUDGET_MS = 150.0
"""The least budget for reranking the fused top ``RERANK_DEPTH`` (about 100 ms of
cross-encoder on 2 cores, README "Fusion"), on top of the hybrid's search."""


def rule_report(
    dataset: str, statistics: CorpusStatistics, *, budget_ms: float, reranker: bool
) -> PickReport:
    """The stack the rules give for a corpus of ``statistics`` under ``budget_ms``.

    Rules, in order:

    1. ``budget_ms`` under ``BM25_ONLY_BUDGET_MS``: BM25 alone (no query encoding fits).
    2. An identifier share of at least ``IDENTIFIER_SHARE``: BM25 + dense, dbsf, BM25 weighed
       ``BM25_WEIGHT``; dense alone is refused (it blurs codes and part numbers).
    3. Otherwise BM25 + dense with dbsf at equal weights (the best average nDCG@10 over the
       five local collections, docs/fusion.md).
    4. A reranker and a budget of at least ``RERANK_BUDGET_MS``: its top ``RERANK_DEPTH``
       reranked.

    Notes, not changes: up to ``DEFAULT_EXACT_THRESHOLD`` documents the dense leg searches
    exactly (no HNSW recall loss); a median length over ``LONG_DOCUMENT_TOKENS`` advises
    chunking (``ParentDocumentIndex``).

    Parameters
    ----------
    dataset : str
        The collection's name.
    statistics : CorpusStatistics
        Its statistics.
    budget_ms : float
        The p95 latency budget per query.
    reranker : bool
        Whether a cross-encoder is available.
    """
    notes: list[str] = []
    share = statistics.identifier_share
    if budget_ms < BM25_ONLY_BUDGET_MS:
        stack = Stack(retrievers=("bm25",))
        reason = f"a budget under {BM25_ONLY_BUDGET_MS:g} ms leaves no time to encode the query"
    elif share >= IDENTIFIER_SHARE:
        stack = Stack(weights={"bm25": BM25_WEIGHT})
        reason = (
            f"{share:.1%} of the tokens are identifier-like (>= {IDENTIFIER_SHARE:.0%}): "
            "BM25-weighted hybrid"
        )
        notes.append(
            "dense alone refused: a bi-encoder blurs codes, SKUs and error numbers that BM25 "
            "matches exactly"
        )
    else:
        stack = Stack()
        reason = (
            f"{share:.1%} of the tokens are identifier-like (< {IDENTIFIER_SHARE:.0%}): "
            "the default hybrid"
        )
    if reranker and len(stack.retrievers) > 1:
        if budget_ms >= RERANK_BUDGET_MS:
            stack = Stack(stack.retrievers, stack.fusion, stack.weights, rerank=RERANK_DEPTH)
            reason += f"; the budget allows reranking the top {RERANK_DEPTH}"
        else:
            notes.append(
                f"no reranking: the top {RERANK_DEPTH} take the cross-encoder about 100 ms on "
                f"2 cores, more than a {budget_ms:g} ms budget leaves"
            )
    if statistics.n_documents <= DEFAULT_EXACT_THRESHOLD and "dense" in stack.retrievers:
        notes.append(
            f"{statistics.n_documents} documents (<= {DEFAULT_EXACT_THRESHOLD}): the dense leg "
            "searches exactly (no HNSW recall loss)"
        )
    if statistics.median_tokens > LONG_DOCUMENT_TOKENS:
        notes.append(
            f"median document of {statistics.median_tokens:.0f} tokens (> "
            f"{LONG_DOCUMENT_TOKENS}): the bi-encoder reads about {LONG_DOCUMENT_TOKENS} "
            "words; index chunks with ParentDocumentIndex (docs/chunking.md)"
        )
    notes.append(
        "judge a few dozen queries (qrels/train.tsv) and run pick again to measure instead"
    )
    return PickReport(
        dataset=dataset,
        basis="rule",
        name="rule",
        stack=stack,
        budget_ms=budget_ms,
        reason=reason,
        statistics=statistics,
        notes=tuple(notes),
    )
