"""A fake SPLADE encoder and plain-numpy references for the SPLADE tests.

``HashingSparseEncoder`` maps each lowercase token to a hashed vocabulary id with weight
``log1p(count)`` (plus a small hashed bias, so weights are not all alike): deterministic and
fast, with the output type of ``SpladeEncoder``. ``dense_rows`` turns CSR rows into a dense
matrix; ``quantized_matrix`` applies the documented quantization from its definition.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence

import numpy as np

from hybrid_engine import SparseVectors


def _hash(token: str) -> int:
    return int.from_bytes(hashlib.sha256(token.encode()).digest()[:8], "little")


class HashingSparseEncoder:
    """Deterministic stand-in for a SPLADE model over a small vocabulary."""

    def __init__(self, vocab_size: int = 64, name: str = "hashing-sparse-v1") -> None:
        self._vocab_size = vocab_size
        self._hash = hashlib.sha256(name.encode()).hexdigest()
        self.calls = 0

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    @property
    def model_hash(self) -> str:
        return self._hash

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> SparseVectors:
        if isinstance(texts, str):
            texts = [texts]
        self.calls += 1
        offsets = [0]
        terms: list[int] = []
        weights: list[float] = []
        for text in texts:
            row: dict[int, float] = {}
            for token, count in Counter(text.lower().split()).items():
                h = _hash(token)
                term = h % self._vocab_size
                row[term] = row.get(term, 0.0) + np.log1p(count) + (h >> 50) / 2**14 / 4
            for term in sorted(row):
                terms.append(term)
                weights.append(row[term])
            offsets.append(len(terms))
        return SparseVectors(
            np.array(offsets, np.int64), np.array(terms, np.int32), np.array(weights, np.float32)
        )


def dense_rows(vectors: SparseVectors, vocab_size: int) -> np.ndarray:
    """float64 ``(n, vocab_size)`` matrix of CSR rows."""
    offsets, terms, weights = vectors
    out = np.zeros((len(offsets) - 1, vocab_size))
    for row in range(len(offsets) - 1):
        span = slice(offsets[row], offsets[row + 1])
        out[row, terms[span]] = weights[span]
    return out


def quantized_matrix(docs: np.ndarray) -> tuple[np.ndarray, float]:
    """The documented quantization: ``scale = max / 255``, weights replaced by
    ``round(w / scale) * scale`` (float64); returns the matrix and the scale."""
    scale = float(np.float32(docs.max())) / 255
    return np.round(docs / scale) * scale, scale


def top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, scores) ranked by float32 score descending, then position; only positive scores
    are hits, ``min(k, n_docs)`` columns, short rows padded -1 / -inf."""
    n_queries, n_docs = scores.shape
    k = min(k, n_docs)
    ids = np.full((n_queries, k), -1, np.int64)
    out = np.full((n_queries, k), -np.inf, np.float32)
    for q in range(n_queries):
        rounded = scores[q].astype(np.float32)
        order = np.lexsort((np.arange(n_docs), -rounded))
        hits = [d for d in order if rounded[d] > 0][:k]
        ids[q, : len(hits)] = hits
        out[q, : len(hits)] = rounded[hits]
    return ids, out
