"""Collection statistics BM25 scores with: the number of documents and their total length."""

from __future__ import annotations

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
