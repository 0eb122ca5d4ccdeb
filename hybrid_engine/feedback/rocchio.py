"""Rocchio feedback for dense retrieval: the query vector moved towards the mean of its first
pass's top documents, searched again."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hybrid_engine.checks import check_int, check_k, check_threads, is_text_batch
from hybrid_engine.dense import DenseIndex
from hybrid_engine.dense import vectors as _vectors
from hybrid_engine.dense.encoding import encode_queries
from hybrid_engine.feedback._checks import check_number
from hybrid_engine.result import SearchResult

DEFAULT_FB_DOCS = 3
DEFAULT_ALPHA = 1.0
DEFAULT_BETA = 0.25
"""The best of fb_docs {3, 5, 10} x beta {0.25, 0.5, 0.75, 1.0} at alpha 1 on SciFact's training
queries: nDCG@10 0.658 against plain dense's 0.659 there, so no setting beat the first pass;
the lightest touch of the grid (docs/feedback.md)."""


class Rocchio:
    """Rocchio pseudo-relevance feedback over a ``DenseIndex``.

    The expanded query is ``alpha * q + beta * mean(top fb_docs document vectors of q)`` (no
    negative feedback), scaled to unit length under cosine (any positive scale ranks the same
    under either metric), and searched again.

    Parameters
    ----------
    index : DenseIndex
        The index both passes search; text queries need its encoder.
    fb_docs : int
        Feedback documents, >= 1 (all of them when the index holds fewer).
    alpha : float
        Weight of the query vector, in [0, 1e6].
    beta : float
        Weight of the feedback documents' mean, in [0, 1e6]; ``alpha + beta > 0``.
    exact : bool
        Search both passes exactly (``DenseIndex.search(exact=True)``).

    Raises
    ------
    TypeError
        ``index`` is not a ``DenseIndex``, a parameter of the wrong type.
    ValueError
        A parameter out of range, or ``alpha`` and ``beta`` both 0.

    Notes
    -----
    Thread-safe: searches may run from many threads (the index's searches are; the rest reads
    only).
    """

    def __init__(
        self,
        index: DenseIndex,
        *,
        fb_docs: int = DEFAULT_FB_DOCS,
        alpha: float = DEFAULT_ALPHA,
        beta: float = DEFAULT_BETA,
        exact: bool = False,
    ) -> None:
        if not isinstance(index, DenseIndex):
            raise TypeError(f"index must be a DenseIndex, got {type(index).__name__}")
        self._index = index
        self._fb_docs = check_int("fb_docs", fb_docs, 1)
        self._alpha = check_number("alpha", alpha, 0.0, 1e6)
        self._beta = check_number("beta", beta, 0.0, 1e6)
        if self._alpha == 0.0 and self._beta == 0.0:
            raise ValueError("alpha and beta are both 0, which leaves no query; give either > 0")
        if not isinstance(exact, bool):
            raise TypeError(f"exact must be a bool, got {type(exact).__name__}")
        self._exact = exact

    @property
    def index(self) -> DenseIndex:
        """The dense index both passes search."""
        return self._index

    @property
    def fb_docs(self) -> int:
        """Feedback documents per query."""
        return self._fb_docs

    @property
    def alpha(self) -> float:
        """Weight of the query vector."""
        return self._alpha

    @property
    def beta(self) -> float:
        """Weight of the feedback documents' mean vector."""
        return self._beta

    def __repr__(self) -> str:
        return f"Rocchio(fb_docs={self._fb_docs}, alpha={self._alpha}, beta={self._beta})"

    def expand(self, query_vectors: Any, *, num_threads: int | None = None) -> np.ndarray:
        """The expanded query vectors: the first pass and Rocchio's formula, no second pass.

        Parameters
        ----------
        query_vectors : array-like
            Shape ``(dim,)`` or ``(n_queries, dim)``, any real dtype, as ``DenseIndex.search``
            reads them (scaled to unit length under cosine before the first pass).
        num_threads : int, optional
            As in ``DenseIndex.search``.

        Returns
        -------
        numpy.ndarray
            float32 ``(n_queries, dim)``; unit rows under cosine. A row whose formula gives
            the zero vector (``alpha`` 0 and feedback vectors summing to zero) is the query.

        Raises
        ------
        TypeError
            Vectors that are not a numeric array.
        ValueError
            Vectors of another dimension, with NaN or inf, or (cosine) an all-zero row.
        """
        matrix = _vectors.prepare(
            query_vectors, "query vectors", self._index.metric, self._index.dim
        )
        return self._expanded(matrix, check_threads(num_threads))

    def search(
        self,
        queries: str | Sequence[str] | Any,
        k: int = 10,
        *,
        num_threads: int | None = None,
    ) -> SearchResult:
        """Top-k of each query's Rocchio vector (``expand``, then ``DenseIndex.search``).

        Parameters
        ----------
        queries : str, sequence of str, 1-d numpy array of str, or array-like
            Query texts (encoded with the index's encoder; a blank one gets an all-padding
            row) or query vectors, as in ``DenseIndex.search``.
        k : int
            Hits per query, >= 1, padded past the number of documents.
        num_threads : int, optional
            As in ``DenseIndex.search``, both passes.

        Returns
        -------
        SearchResult
            ``ids`` int64 and ``scores`` float32, shape ``(n_queries, k)``: each hit's score
            against the expanded vector.

        Raises
        ------
        ValueError
            ``k < 1``, text queries on an index without an encoder, or bad query vectors (see
            ``expand``).
        TypeError
            Queries that are neither texts nor a numeric array.
        """
        k = check_k(k)
        threads = check_threads(num_threads)
        index = self._index
        if is_text_batch(queries):
            if index.encoder is None:
                raise ValueError(
                    "cannot search text queries: the index has no text encoder; pass encoder= "
                    "to DenseIndex.load or from_vectors, or search with query vectors"
                )
            matrix, rows, n_queries = encode_queries(
                index.encoder, queries, index.dim, index.metric
            )
            if len(rows) == 0:
                return SearchResult.empty(n_queries, k)
            expanded = self._expanded(matrix, threads)
            found = index.search(expanded, k, exact=self._exact, num_threads=threads)
            return found.scattered(rows, n_queries)
        if isinstance(queries, Sequence) and len(queries) == 0:
            return SearchResult.empty(0, k)
        expanded = self.expand(queries, num_threads=threads)
        return index.search(expanded, k, exact=self._exact, num_threads=threads)

    def _expanded(self, matrix: np.ndarray, threads: int) -> np.ndarray:
        """Rocchio vectors of prepared query rows (float32 ``(n, dim)``)."""
        first = self._index.search(matrix, self._fb_docs, exact=self._exact, num_threads=threads)
        hits = first.ids >= 0
        vectors = self._index.vectors[np.where(hits, first.ids, 0)].astype(np.float64)
        vectors *= hits[:, :, None]
        mean = vectors.sum(axis=1) / np.maximum(hits.sum(axis=1), 1)[:, None]
        expanded = self._alpha * matrix.astype(np.float64) + self._beta * mean
        norms = np.linalg.norm(expanded, axis=1)
        zero = norms == 0.0
        expanded[zero] = matrix[zero]
        norms[zero] = np.linalg.norm(matrix[zero].astype(np.float64), axis=1)
        if self._index.metric == "cosine":
            expanded /= norms[:, None]
        return expanded.astype(np.float32)
