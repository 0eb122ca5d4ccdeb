"""The BM25 statistics of a sharded collection: every shard's live counts, added up once, then
kept up to date by each commit's changes.

A shard's BM25 legs score with the collection's statistics: its document count, total length
and each term's count of live documents over every shard (joined by term string), so that
every score is the one a single index over all live documents gives. The coordinator adds up
every shard's counts when it opens (``CollectionCounts.of_shards``); at each commit it adds
only what changed (``CollectionCounts.add``: the terms of the documents added and deleted) and
sends every shard the new counts of those terms, not the whole vocabulary's.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from hybrid_engine.distributed.worker import BM25Counts, BM25Delta


class CollectionCounts:
    """The collection's live documents, total length and count of each term, at one
    generation.

    Notes
    -----
    Thread-safe: ``of`` may run from search threads while the writer runs ``add``.
    """

    def __init__(self, stats: tuple[int, int], table: dict[str, int], generation: int) -> None:
        self.stats = stats
        self._table = table
        self._generation = generation
        self._lock = threading.Lock()

    @classmethod
    def of_shards(
        cls, shards: Sequence[BM25Counts], generation: int
    ) -> tuple[CollectionCounts, list[np.ndarray]]:
        """The counts of ``shards`` added up, and for each shard the collection's count of
        each of its terms (int64, aligned with its ``terms``)."""
        n_docs = sum(shard.n_docs for shard in shards)
        total_length = sum(shard.total_length for shard in shards)
        terms = np.concatenate([np.asarray(shard.terms, dtype=object) for shard in shards])
        counts = np.concatenate([shard.doc_freqs for shard in shards]).astype(np.int64)
        if len(terms) == 0:
            empty = [np.zeros(0, np.int64) for _ in shards]
            return cls((n_docs, total_length), {}, generation), empty
        unique, inverse = np.unique(terms, return_inverse=True)
        totals = np.zeros(len(unique), np.int64)
        np.add.at(totals, inverse, counts)
        per_shard, start = [], 0
        for shard in shards:
            stop = start + len(shard.terms)
            per_shard.append(totals[inverse[start:stop]])
            start = stop
        table = dict(zip(unique.tolist(), totals.tolist(), strict=True))
        return cls((n_docs, total_length), table, generation), per_shard

    def add(self, deltas: Sequence[BM25Delta], generation: int) -> tuple[list[str], np.ndarray]:
        """Add every shard's changes since the last generation (each shard's documents and
        length are its own now); the terms whose count changed, and their counts (int64)."""
        with self._lock:
            changed: dict[str, None] = {}
            for delta in deltas:
                for term, change in zip(delta.terms, delta.changes.tolist(), strict=True):
                    self._table[term] = self._table.get(term, 0) + change
                    changed[term] = None
            self.stats = (
                sum(delta.n_docs for delta in deltas),
                sum(delta.total_length for delta in deltas),
            )
            self._generation = generation
            terms = list(changed)
            return terms, np.array([self._table[t] for t in terms], dtype=np.int64)

    def of(self, terms: Sequence[str], generation: int) -> np.ndarray | None:
        """The count of each of ``terms`` (int64; 0 for one no live document holds) at
        ``generation``; None when the counts have moved on from it."""
        with self._lock:
            if generation != self._generation:
                return None
            return np.array([self._table.get(t, 0) for t in terms], dtype=np.int64)
