"""Brute-force k-nearest neighbours written from the definitions, as the oracle of DenseIndex,
plus the fakes and data the dense tests share.

``knn`` is plain Python: every score is a correctly rounded float64 sum (``math.fsum``) of the
float32 products, rounded to float32, and rows are sorted by (-score, position). ``knn_float64``
is the same ranking with numpy float64 products, fast enough for a few thousand vectors (it
can differ from ``knn`` in the last bit of a score, so it serves recall, not exact equality).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np

from hybrid_engine import SearchResult


def unit_rows(vectors: np.ndarray) -> list[list[float]]:
    """Rows as float32 values scaled to unit length: ``float32(v / sqrt(fsum(v**2)))``."""
    rows = []
    for row in np.asarray(vectors, dtype=np.float32).tolist():
        norm = math.sqrt(math.fsum(v * v for v in row))
        rows.append([float(np.float32(v / norm)) for v in row])
    return rows


def knn(
    vectors: np.ndarray, queries: np.ndarray, k: int, metric: str
) -> tuple[np.ndarray, np.ndarray]:
    """(ids, scores) of the exact top-k, ``min(k, len(vectors))`` columns."""
    if metric == "cosine":
        docs, qs = unit_rows(vectors), unit_rows(queries)
    else:
        docs = np.asarray(vectors, dtype=np.float32).tolist()
        qs = np.asarray(queries, dtype=np.float32).tolist()
    k = min(k, len(docs))
    ids = np.full((len(qs), k), -1, dtype=np.int64)
    scores = np.full((len(qs), k), -np.inf, dtype=np.float32)
    for row, query in enumerate(qs):
        scored = [
            (float(np.float32(math.fsum(a * b for a, b in zip(doc, query)))), position)
            for position, doc in enumerate(docs)
        ]
        scored.sort(key=lambda hit: (-hit[0], hit[1]))
        for rank, (score, position) in enumerate(scored[:k]):
            ids[row, rank], scores[row, rank] = position, score
    return ids, scores


def knn_float64(vectors: np.ndarray, queries: np.ndarray, k: int, metric: str) -> np.ndarray:
    """Ids of the top-k by float64 scores (ties by position), for recall."""
    docs = np.asarray(vectors, dtype=np.float64)
    qs = np.asarray(queries, dtype=np.float64)
    if metric == "cosine":
        docs = docs / np.linalg.norm(docs, axis=1, keepdims=True)
        qs = qs / np.linalg.norm(qs, axis=1, keepdims=True)
    scores = qs @ docs.T
    positions = np.broadcast_to(np.arange(len(docs)), scores.shape)
    return np.lexsort((positions, -scores), axis=1)[:, :k]


def brute_force(
    vectors: np.ndarray, queries: np.ndarray, allowed: np.ndarray, k: int
) -> np.ndarray:
    """Top-k positions among the allowed vectors by float64 cosine, ties by position, -1
    padded: the recall oracle."""
    docs = vectors.astype(np.float64)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    qs = queries.astype(np.float64)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    rows = np.flatnonzero(allowed)
    order = np.argsort(-(qs @ docs[rows].T), axis=1, kind="stable")[:, :k]
    out = np.full((len(queries), k), -1, dtype=np.int64)
    out[:, : order.shape[1]] = rows[order]
    return out


def recall(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean fraction of each row of ``truth`` that ``found`` holds."""
    return float(np.mean([len(set(f) & set(t)) / len(t) for f, t in zip(found, truth)]))


def clustered(n: int, dim: int, seed: int, clusters: int = 40) -> np.ndarray:
    """Gaussian clusters around fixed random centres (fixed for a given ``dim``)."""
    centres = np.random.default_rng(1000 + dim).standard_normal((clusters, dim))
    rng = np.random.default_rng(seed)
    return (centres[rng.integers(clusters, size=n)] + 0.3 * rng.standard_normal((n, dim))).astype(
        np.float32
    )


def assert_rows_well_formed(result: SearchResult, n_docs: int) -> None:
    """Sorted rows, ties by position, unique ids in range, padding only at the end."""
    assert result.ids.dtype == np.int64 and result.scores.dtype == np.float32
    for ids, scores in zip(result.ids, result.scores):
        hits = ids >= 0
        n_hits = int(hits.sum())
        assert hits[:n_hits].all() and not hits[n_hits:].any()
        assert n_hits == min(len(ids), n_docs)
        assert np.all(scores[n_hits:] == -np.inf)
        assert len(set(ids[:n_hits])) == n_hits and ids[:n_hits].max(initial=0) < n_docs
        pairs = list(zip(-scores[:n_hits], ids[:n_hits]))
        assert pairs == sorted(pairs)


class HashingEncoder:
    """A deterministic stand-in for a text model: each token adds ±1 to one hashed coordinate,
    then the row is L2-normalised (an empty text gets the first unit vector)."""

    def __init__(self, dim: int = 48, name: str = "hashing-v1") -> None:
        self._dim = dim
        self._hash = hashlib.sha256(name.encode()).hexdigest()
        self.calls: list[tuple[int, int]] = []
        """(number of texts, batch_size) of every ``encode`` call."""

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def model_hash(self) -> str:
        return self._hash

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 32, show_progress: bool = False
    ) -> np.ndarray:
        self.calls.append((len(texts), batch_size))
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in text.lower().split():
                h = int.from_bytes(hashlib.sha256(token.encode()).digest()[:8], "little")
                out[row, h % self._dim] += 1.0 if (h >> 40) & 1 else -1.0
            if not out[row].any():
                out[row, 0] = 1.0
        out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out


class Sha256Encoder:
    """A fake text model for the embedding cache's tests: each text's vector is read off its
    sha256 (``sha256_vectors``, the oracle); ``encoded`` records the texts it was asked for."""

    dim = 8
    model_hash = "sha256-v1"

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        self.encoded.extend(texts)
        return sha256_vectors(texts)


def sha256_vectors(texts: Sequence[str]) -> np.ndarray:
    """float32 ``(len(texts), 8)``: the first 8 bytes of each text's sha256, over 255."""
    rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], np.uint8) for t in texts]
    return np.asarray(rows, np.float32).reshape(len(texts), Sha256Encoder.dim) / 255


class RandomVectorEncoder:
    """A text's vector: a unit Gaussian seeded by the text's sha256 (independent of the batch),
    so neighbourhoods have no structure for the graph to exploit."""

    dim = 32
    model_hash = "random-vectors-v1"

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 32, show_progress: bool = False
    ) -> np.ndarray:
        out = np.empty((len(texts), self.dim), np.float32)
        for row, text in enumerate(texts):
            seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
            v = np.random.default_rng(seed).normal(size=self.dim)
            out[row] = v / np.linalg.norm(v)
        return out
