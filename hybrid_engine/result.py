"""The types results come in: ``SearchResult`` (every retriever), ``SparseVectors`` (sparse
encoders) and ``Hit`` (one document of a search or a get, with its text and metadata)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

PAD_ID = -1
"""Sentinel in ``SearchResult.ids`` where a query has fewer hits than its row has columns."""


def hits_width(k: int, n_docs: int) -> int:
    """The columns of a result of ``k`` hits per query over ``n_docs`` documents:
    ``min(k, n_docs)``. No row can hold more hits than there are documents, so a result (and
    every buffer behind it) is sized by the index, never by a huge ``k``."""
    return min(k, n_docs)


@dataclass(frozen=True)
class SearchResult:
    """Top-k hits of a batch of queries.

    A search for ``k`` hits over ``n`` documents returns ``width = min(k, n)`` columns
    (``hits_width``; ``n`` counts the index's live documents, whether a filter allows them or
    not): a ``k`` above the document count costs no more than ``k = n``.

    Attributes
    ----------
    ids : numpy.ndarray
        int64, shape ``(n_queries, width)``: positions into the corpus, best first. ``-1``
        (``PAD_ID``) pads rows of queries with fewer hits than ``width`` (fewer documents
        match: a filter, query terms that few documents hold); padding is always at the end
        of a row.
    scores : numpy.ndarray
        float32, shape ``(n_queries, width)``: higher is better, rows sorted descending;
        ``-inf`` where ``ids == -1``. Equal scores are ordered by ascending position.
    """

    ids: np.ndarray
    scores: np.ndarray

    def __post_init__(self) -> None:
        if self.ids.shape != self.scores.shape or self.ids.ndim != 2:
            raise ValueError(
                f"ids and scores must have the same 2-d shape, got {self.ids.shape} "
                f"and {self.scores.shape}"
            )

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @classmethod
    def empty(cls, n_queries: int, k: int) -> SearchResult:
        """All-padding result of shape ``(n_queries, k)``."""
        return cls(
            ids=np.full((n_queries, k), PAD_ID, dtype=np.int64),
            scores=np.full((n_queries, k), -np.inf, dtype=np.float32),
        )

    def scattered(self, rows: np.ndarray, n_queries: int) -> SearchResult:
        """These rows placed at positions ``rows`` (ascending, distinct) of a result of
        ``n_queries`` rows, the other rows all padding: how a batch searched without its blank
        queries (``checks.nonblank_rows``) gets its full shape back."""
        if len(rows) == n_queries:
            return self
        out = SearchResult.empty(n_queries, self.ids.shape[1])
        out.ids[rows] = self.ids
        out.scores[rows] = self.scores
        return out


class SparseVectors(NamedTuple):
    """Sparse vectors as CSR: row ``i`` has terms ``terms[offsets[i]:offsets[i + 1]]`` (int32,
    ascending) with weights ``weights[offsets[i]:offsets[i + 1]]`` (float32, all > 0).

    Attributes
    ----------
    offsets : numpy.ndarray
        int64, shape ``(n + 1,)``, ``offsets[0] == 0``.
    terms : numpy.ndarray
        int32, shape ``(offsets[-1],)``: vocabulary ids.
    weights : numpy.ndarray
        float32, shape ``(offsets[-1],)``.
    """

    offsets: np.ndarray
    terms: np.ndarray
    weights: np.ndarray

    def take(self, rows: np.ndarray) -> SparseVectors:
        """The vectors of ``rows`` (int64 row numbers), in that order."""
        starts = self.offsets[rows]
        lengths = self.offsets[rows + 1] - starts
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        entries = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
        return SparseVectors(offsets, self.terms[entries], self.weights[entries])


@dataclass(frozen=True)
class Hit:
    """One search hit.

    Attributes
    ----------
    id : str
        The document's external id.
    score : float
        Its score in the result (fused, reranked or MMR's, as the search returned); NaN in
        the hits of ``HybridIndex.get``, which is no search.
    title, text : str
        The document's title (``""`` where none) and text (without the title).
    metadata : dict
        Its metadata fields.
    """

    id: str
    score: float
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
