"""A plain-numpy BM25, written from the formulas, as the oracle for the numba kernels."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np


def idf(df: float, n: int, method: str) -> float:
    if method == "lucene":
        return float(np.log(1.0 + (n - df + 0.5) / (df + 0.5)))
    if method == "robertson":
        return float(np.log(max((n - df + 0.5) / (df + 0.5), 1.0)))
    if method == "atire":
        return float(np.log(n / df))
    if method == "bm25l":
        return float(np.log((n + 1) / (df + 0.5)))
    if method == "bm25+":
        return float(np.log((n + 1) / df))
    raise ValueError(method)


def tfc(
    tf: np.ndarray, dl: np.ndarray, avgdl: float, k1: float, b: float, delta: float, method: str
) -> np.ndarray:
    norm = 1.0 - b + b * dl / avgdl if avgdl > 0 else np.ones_like(dl)
    if method in ("lucene", "robertson"):
        return tf / (tf + k1 * norm)
    if method == "atire":
        return tf * (k1 + 1) / (tf + k1 * norm)
    if method == "bm25l":
        c = tf / norm
        return (k1 + 1) * (c + delta) / (k1 + c + delta)
    if method == "bm25+":
        return (k1 + 1) * tf / (tf + k1 * norm) + delta
    raise ValueError(method)


class NumpyBM25:
    """Exhaustive BM25 over pre-tokenised documents, float64 throughout."""

    def __init__(
        self, docs_tokens: list[list[str]], *, k1: float, b: float, method: str, delta: float = 0.5
    ):
        self.k1, self.b, self.method, self.delta = k1, b, method, delta
        self.n = len(docs_tokens)
        self.dl = np.array([len(t) for t in docs_tokens], dtype=np.float64)
        self.avgdl = float(self.dl.mean())
        post: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
        for d, tokens in enumerate(docs_tokens):
            for term, tf in Counter(tokens).items():
                post[term][0].append(d)
                post[term][1].append(tf)
        self.postings = {
            t: (np.array(d), np.array(f, dtype=np.float64)) for t, (d, f) in post.items()
        }

    def scores(self, query_tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(scores, matched) over all documents; a query token counts once per occurrence.

        A document matches when it holds a query term of positive idf: a term whose idf is 0
        (robertson's clamp for terms in more than half the documents, atire's log(n / n))
        neither scores nor matches.
        """
        acc = np.zeros(self.n)
        matched = np.zeros(self.n, dtype=bool)
        for term in query_tokens:
            if term not in self.postings:
                continue
            docs, tf = self.postings[term]
            w = idf(len(docs), self.n, self.method)
            if w <= 0.0:
                continue
            acc[docs] += w * tfc(
                tf, self.dl[docs], self.avgdl, self.k1, self.b, self.delta, self.method
            )
            matched[docs] = True
        return acc, matched

    def top_k(
        self, query_tokens: list[str], k: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top-k positions and scores among matching documents (those of ``allowed`` only,
        when given); ties by ascending position."""
        acc, matched = self.scores(query_tokens)
        if allowed is not None:
            matched &= allowed
        candidates = np.flatnonzero(matched)
        order = np.lexsort((candidates, -acc[candidates]))[:k]
        return candidates[order], acc[candidates[order]]
