"""Fuzz the query path of the BM25 leg: arbitrary query batches (fuzzed Unicode mixed with the
corpus' words, lone surrogates, non-str items, numpy arrays), ``k``, ``allowed`` masks and
weighted queries, over indexes of every BM25 variant and several analyzer settings.

Contract checked: bad input is a ``ValueError`` or ``TypeError``; otherwise every row equals
the plain-numpy BM25 oracle's top-k over the index's own tokens (``bm25_checks``), with its
padding rules.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

import atheris
import numpy as np
from bm25_checks import compare_with_oracle, oracle_for
from bm25_oracle import NumpyBM25

from hybrid_engine import Analyzer, AnalyzerConfig, BM25Index
from tests.fuzz._corpus import WORDS, corpus
from tests.fuzz._harness import EXPECTED, Unexpected, main

SETTINGS: tuple[dict[str, Any], ...] = (
    {"method": "lucene"},
    {"method": "bm25l", "analyzer": AnalyzerConfig(cjk="bigram", stemmer="none", lowercase=False)},
    {"method": "robertson", "analyzer": AnalyzerConfig(min_token_length=1), "cache_impacts": False},
    {"method": "atire", "analyzer": AnalyzerConfig(stopwords=False, strip_accents=False)},
    {"method": "bm25+", "k1": 0.0, "b": 1.0, "cache_impacts": True},
)
"""The indexes the harness picks from (``BM25Index.build`` keywords)."""


@cache
def indexes() -> list[tuple[BM25Index, NumpyBM25, Analyzer]]:
    docs = corpus()
    out = []
    for settings in SETTINGS:
        index = BM25Index.build(docs, num_threads=1, **settings)
        oracle, analyzer = oracle_for(index, docs)
        out.append((index, oracle, analyzer))
    return out


def query_text(fdp: atheris.FuzzedDataProvider) -> str:
    """Corpus words and fuzzed text, joined by fuzzed separators."""
    parts = []
    for _ in range(fdp.ConsumeIntInRange(0, 6)):
        if fdp.ConsumeBool():
            parts.append(fdp.PickValueInList(list(WORDS)))
        else:
            parts.append(fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 40)))
    return fdp.ConsumeUnicode(2).join(parts)


def queries_of(fdp: atheris.FuzzedDataProvider) -> Any:
    """A query batch, usually well formed, sometimes of a wrong type."""
    texts = [query_text(fdp) for _ in range(fdp.ConsumeIntInRange(0, 5))]
    shape = fdp.ConsumeIntInRange(0, 9)
    if shape == 0:
        return texts[0] if texts else ""
    if shape == 1:
        return np.array(texts, dtype=str) if texts else np.array([], dtype=str)
    if shape == 2:
        return np.array(texts, dtype=object)
    if shape == 3:
        return tuple(texts)
    if shape == 4:
        return [*texts, fdp.PickValueInList([None, 3, b"bytes", 1.5, ["nested"]])]
    if shape == 5:
        return b"bytes query"
    return texts


def k_of(fdp: atheris.FuzzedDataProvider) -> Any:
    choice = fdp.ConsumeIntInRange(0, 12)
    odd = [0, -1, True, 2.0, "3", None, 1 << 70, np.int64(4)]
    return odd[choice] if choice < len(odd) else fdp.ConsumeIntInRange(1, 70)


def allowed_of(fdp: atheris.FuzzedDataProvider, n_docs: int) -> Any:
    choice = fdp.ConsumeIntInRange(0, 7)
    if choice == 0:
        bits = fdp.ConsumeBytes((n_docs + 7) // 8).ljust((n_docs + 7) // 8, b"\xff")
        return np.unpackbits(np.frombuffer(bits, np.uint8), count=n_docs).astype(bool)
    if choice == 1:
        return np.zeros(n_docs, dtype=bool)
    if choice == 2:
        return np.ones(n_docs + fdp.ConsumeIntInRange(-2, 2), dtype=bool)
    if choice == 3:
        return np.ones(n_docs, dtype=np.int8)
    if choice == 4:
        return np.ones(2 * n_docs, dtype=bool)[::2]
    return None


def weighted_of(fdp: atheris.FuzzedDataProvider, analyzer: Analyzer) -> Any:
    """Weighted queries: analysed corpus words or fuzzed terms, with fuzzed weights."""
    weights = [1.0, 0.5, 3.0, 0.0, -1.0, float("nan"), float("inf"), 1e39, 1e-45, True, "1", None]
    queries: list[Any] = []
    for _ in range(fdp.ConsumeIntInRange(0, 3)):
        query: dict[Any, Any] = {}
        for _ in range(fdp.ConsumeIntInRange(0, 4)):
            words = analyzer.analyze(fdp.PickValueInList(list(WORDS)))
            term: Any = words[0] if words and fdp.ConsumeBool() else fdp.ConsumeUnicode(6)
            if fdp.ConsumeIntInRange(0, 15) == 0:
                term = fdp.PickValueInList([3, None, b"x"])
            query[term] = fdp.PickValueInList(weights) if fdp.ConsumeBool() else fdp.ConsumeFloat()
        queries.append(query)
    if fdp.ConsumeIntInRange(0, 15) == 0:
        return queries[0] if queries else {}
    return queries


def check_weighted(index: BM25Index, oracle: NumpyBM25, queries: Any, k: Any, allowed: Any) -> None:
    try:
        result = index.search_weighted(queries, k, allowed=allowed)
    except EXPECTED:
        return
    n = len(queries)
    assert result.ids.shape == (n, min(k, oracle.n))  # at most every document
    for q, query in enumerate(queries):
        acc = np.zeros(oracle.n)
        matched = np.zeros(oracle.n, dtype=bool)
        for term, weight in query.items():
            part, hit = oracle.scores([term])
            acc += float(np.float32(weight)) * part
            matched |= hit
        if allowed is not None:
            matched &= allowed
        candidates = np.flatnonzero(matched)
        want = candidates[np.lexsort((candidates, -acc[candidates]))][:k]
        got = result.ids[q][result.ids[q] >= 0]
        if len(got) != len(want) or not np.all(matched[got]):
            raise Unexpected(f"weighted query {query!r}: got {got}, the oracle {want}")
        np.testing.assert_allclose(result.scores[q][: len(got)], acc[got], rtol=1e-4, atol=1e-6)


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    index, oracle, analyzer = fdp.PickValueInList(indexes())
    k, allowed = k_of(fdp), allowed_of(fdp, index.num_documents)
    if fdp.ConsumeIntInRange(0, 3) == 0:
        check_weighted(index, oracle, weighted_of(fdp, analyzer), k, allowed)
        return
    queries = queries_of(fdp)
    try:
        result = index.search(queries, k, allowed=allowed)
    except EXPECTED:
        return
    texts = [queries] if isinstance(queries, str) else list(queries)
    tokens = [analyzer.analyze(text) for text in texts]
    compare_with_oracle(result, oracle, tokens, int(k), allowed)


if __name__ == "__main__":
    main(one_input, sys.argv)
