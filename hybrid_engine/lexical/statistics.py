"""Collection statistics BM25 scores with: the number of documents and their total length."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class CollectionStats:
    """The document count and total document length of a collection (e.g. the live documents
    of every segment of a live index), from which BM25 takes ``N`` and ``avgdl = total_length
    / n_docs``.

    Statistics of parts add up (``a + b``), so a snapshot's are the sum of its segments'
    (``BM25Index.live_statistics``).

    Parameters
    ----------
    n_docs : int
        Documents, >= 0.
    total_length : int
        Indexed terms over all of them (each document's length counts its repeats), >= 0.
    """

    n_docs: int
    total_length: int

    def __post_init__(self) -> None:
        for name in ("n_docs", "total_length"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(f"CollectionStats.{name} must be an int >= 0, got {value!r}")
            object.__setattr__(self, name, int(value))
        if self.n_docs == 0 and self.total_length != 0:
            raise ValueError(
                f"CollectionStats of no documents must have total_length 0, got {self.total_length}"
            )

    @property
    def avg_doc_length(self) -> float:
        """``total_length / n_docs`` (0.0 when there are no documents)."""
        return self.total_length / self.n_docs if self.n_docs else 0.0

    def __add__(self, other: CollectionStats) -> CollectionStats:
        if not isinstance(other, CollectionStats):
            return NotImplemented
        return CollectionStats(self.n_docs + other.n_docs, self.total_length + other.total_length)


def check_statistics(stats: CollectionStats, doc_freqs: np.ndarray, terms: Sequence[str]) -> None:
    """Check a collection's statistics for an index of vocabulary ``terms`` to score with
    (``BM25Index.with_statistics``): ``stats`` of at least one document, and ``doc_freqs``
    int64 ``(len(terms),)`` with every count in ``[0, stats.n_docs]``.

    Raises
    ------
    TypeError, ValueError
        Those ``BM25Index.with_statistics`` lists.
    """
    if not isinstance(stats, CollectionStats):
        raise TypeError(f"stats must be a CollectionStats, got {type(stats).__name__}")
    if stats.n_docs < 1:
        raise ValueError("stats.n_docs must be >= 1: BM25 scores need at least one document")
    if not isinstance(doc_freqs, np.ndarray) or doc_freqs.dtype != np.int64:
        got = doc_freqs.dtype if isinstance(doc_freqs, np.ndarray) else type(doc_freqs)
        raise TypeError(f"doc_freqs must be an int64 numpy array, got {got}")
    if doc_freqs.shape != (len(terms),):
        raise ValueError(
            f"doc_freqs must have shape ({len(terms)},), one count per term id of this "
            f"index (aligned with its terms), got {doc_freqs.shape}"
        )
    bad = np.flatnonzero((doc_freqs < 0) | (doc_freqs > stats.n_docs))
    if len(bad):
        term = int(bad[0])
        raise ValueError(
            f"doc_freqs[{term}] (term {terms[term]!r}) is {int(doc_freqs[term])}, "
            f"outside [0, stats.n_docs={stats.n_docs}]"
        )
