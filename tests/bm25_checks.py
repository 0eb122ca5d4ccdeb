"""Helpers shared by the BM25 tests: the oracle over the index's own tokens, row checks."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from bm25_oracle import NumpyBM25

from hybrid_engine import Analyzer, BM25Index, SearchResult
from hybrid_engine.lexical import _kernels as kernels

NEAR_TIE = 1e-6
"""Oracle scores closer than this (relative) may swap: the kernels use float32 length factors
and impacts, so such documents can legitimately come out in either order."""
SCORE_RTOL = 1e-4

# Every query through one accumulation path: the default choice, always sparse (hits tracked
# per posting), or always dense with windows of 7 documents (so a query spans many windows,
# posting lists resume across them, and large k compacts its candidates between windows).
# Values: (kernels.dense_work replacement, kernels.WINDOW), to monkeypatch; None keeps both.
PATHS = {
    "auto": None,
    "sparse": (lambda n_docs, k: 1 << 62, kernels.WINDOW),
    "dense-windows": (lambda n_docs, k: 0, 7),
}


def doc_text(doc: str | dict) -> str:
    """The text an index analyses for one document (``title + " " + text``)."""
    if isinstance(doc, str):
        return doc
    title = doc.get("title")
    return f"{title} {doc['text']}" if title else doc["text"]


def oracle_for(index: BM25Index, corpus: Sequence[str | dict]) -> tuple[NumpyBM25, Analyzer]:
    """The numpy oracle over the same tokens the index saw, with the index's parameters."""
    analyzer = Analyzer(index.analyzer)
    p = index.params
    tokens = [analyzer.analyze(doc_text(doc)) for doc in corpus]
    return NumpyBM25(tokens, k1=p.k1, b=p.b, method=p.method, delta=p.delta), analyzer


@dataclass
class Comparison:
    """How a batch of result rows compared with the oracle."""

    exact: int = 0
    near_ties: list[tuple[int, int, int, float]] = field(default_factory=list)
    """(query, rank, position, relative oracle score gap) of every swapped pair."""


def compare_with_oracle(
    result: SearchResult,
    oracle: NumpyBM25,
    query_tokens: Sequence[Sequence[str]],
    k: int,
    allowed: np.ndarray | None = None,
) -> Comparison:
    """Assert each row is the oracle's top-k (ties by position) up to float32 near-ties.

    ``min(k, documents)`` columns; a row must hold exactly ``min(k, matching documents)``
    hits, then padding; each hit must
    match and score within ``SCORE_RTOL`` of the oracle; ids must equal the oracle's top-k,
    except where the two swapped documents' oracle scores are within ``NEAR_TIE``. With
    ``allowed``, only the documents it marks count as matching.
    """
    width = min(k, oracle.n)  # a row has at most every document (results.hits_width)
    assert result.ids.shape == result.scores.shape == (len(query_tokens), width)
    assert result.ids.dtype == np.int64 and result.scores.dtype == np.float32
    comparison = Comparison()
    for q, tokens in enumerate(query_tokens):
        acc, matched = oracle.scores(list(tokens))
        if allowed is not None:
            matched &= allowed
        want_ids, want_scores = oracle.top_k(list(tokens), k, allowed)
        ids, scores = result.ids[q], result.scores[q]
        n = len(want_ids)
        assert n == min(k, int(matched.sum()))
        assert np.all(ids[n:] == -1) and np.all(scores[n:] == -np.inf), f"query {q}: padding"
        got = ids[:n]
        assert np.all(got >= 0), f"query {q}: padding before the end of the hits"
        assert np.all(matched[got]), f"query {q}: a hit holds no query term"
        np.testing.assert_allclose(scores[:n], acc[got], rtol=SCORE_RTOL, err_msg=f"query {q}")
        np.testing.assert_allclose(scores[:n], want_scores, rtol=SCORE_RTOL, err_msg=f"query {q}")
        if np.array_equal(got, want_ids):
            comparison.exact += 1
            continue
        for rank in np.flatnonzero(got != want_ids):
            a, b = acc[got[rank]], acc[want_ids[rank]]
            gap = abs(a - b) / max(abs(a), abs(b))
            assert gap <= NEAR_TIE, (
                f"query {q} rank {rank}: got position {got[rank]} (oracle {a!r}), oracle ranks "
                f"position {want_ids[rank]} ({b!r}) there; not a float32 near-tie"
            )
            comparison.near_ties.append((q, int(rank), int(got[rank]), float(gap)))
    return comparison


def assert_row_invariants(result: SearchResult, n_docs: int) -> None:
    """Rows sorted descending, ties by ascending position, unique ids, padding at the end."""
    for ids, scores in zip(result.ids, result.scores):
        pad = ids == -1
        n = int(np.argmax(pad)) if pad.any() else len(ids)
        assert pad[n:].all() and not pad[:n].any(), "padding must be at the end of a row"
        assert np.all(scores[n:] == -np.inf) and np.all(np.isfinite(scores[:n]))
        assert np.all(scores[:n] > 0), "hits have positive scores"
        hits, hit_scores = ids[:n], scores[:n]
        assert np.all((hits >= 0) & (hits < n_docs))
        assert len(np.unique(hits)) == n, "ids repeat within a row"
        assert np.all(np.diff(hit_scores) <= 0), "scores must not increase along a row"
        ties = np.diff(hit_scores) == 0
        assert np.all(np.diff(hits)[ties] > 0), "equal scores must be ordered by position"


def read_jsonl_gz(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]
