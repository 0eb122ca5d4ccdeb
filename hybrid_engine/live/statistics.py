"""BM25 collection statistics over the live documents of every segment.

Each segment's BM25 index has its own vocabulary and counts. A snapshot scores every segment
with the statistics of the whole live collection: the number of live documents, their total
length, and for each term the number of live documents holding it, summed over segments by
term string. So a segment's scores equal those of one index freshly built over the live
documents, and deleting or adding documents anywhere changes every score as it would there,
with no postings rebuilt (Lucene and tantivy keep deleted documents in these statistics
until a merge; here they never count).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hybrid_engine import _core
from hybrid_engine.lexical.index import BM25Index
from hybrid_engine.lexical.statistics import CollectionStats
from hybrid_engine.packed import pack_utf8


class TermMap:
    """Engine-wide term ids: each segment's term ids mapped to one shared vocabulary.

    Grows as segments are added (their new terms get new ids); never shrinks (a term whose
    documents are all gone keeps its id with a live count of 0). The vocabulary is a C++
    ``StringTable``: its terms back to back and a hash table, about 30 bytes a term.
    """

    def __init__(self) -> None:
        self._table = _core.StringTable()

    def __len__(self) -> int:
        return len(self._table)

    @property
    def terms(self) -> list[str]:
        """Every term, by shared id."""
        return self._table.keys()

    def take(self, ids: np.ndarray) -> list[str]:
        """The terms of shared ids ``ids`` (int64)."""
        return self._table.take(ids)

    def find(self, terms: Sequence[str]) -> np.ndarray:
        """int64: the shared id of each of ``terms``, -1 for one the map does not hold."""
        arena, offsets = pack_utf8(list(terms))
        return self._table.find_arena(arena, offsets)

    def map(self, index: BM25Index) -> np.ndarray:
        """int64 ``(index.num_terms,)``: the shared id of each of ``index``'s terms (new
        terms get new ids)."""
        arrays = index.terms.arrays("vocab")
        return self._table.insert_arena(arrays["vocab_bytes"], arrays["vocab_offsets"])


def live_counts(
    indexes: Sequence[BM25Index],
    live: Sequence[np.ndarray | None],
    term_maps: Sequence[np.ndarray],
    n_terms: int,
) -> tuple[CollectionStats, np.ndarray]:
    """The live collection's statistics over ``indexes`` and each shared term's live
    document count (int64 ``(n_terms,)``, by ``TermMap`` id).

    Parameters
    ----------
    indexes : sequence of BM25Index
        The segments' BM25 legs.
    live : sequence of numpy.ndarray or None
        Each segment's bool mask of live documents, None when all are live.
    term_maps : sequence of numpy.ndarray
        ``TermMap.map`` of each.
    n_terms : int
        ``len(TermMap)``.
    """
    stats = CollectionStats(n_docs=0, total_length=0)
    doc_freqs = np.zeros(n_terms, dtype=np.int64)
    for index, mask, term_map in zip(indexes, live, term_maps, strict=True):
        if mask is None:
            counts = index.doc_freqs
            stats = stats + index.statistics
        else:
            counts = index.live_doc_freqs(mask)
            stats = stats + index.live_statistics(mask)
        np.add.at(doc_freqs, term_map, counts)
    return stats, doc_freqs


def scored_views(
    indexes: Sequence[BM25Index],
    term_maps: Sequence[np.ndarray],
    stats: CollectionStats,
    doc_freqs: np.ndarray,
) -> list[BM25Index]:
    """Each of ``indexes`` scoring with a collection's statistics: ``stats`` and the
    document count of each shared term (``doc_freqs``, int64 by ``TermMap`` id; the live
    collection's from ``live_counts``, or a larger collection's that holds it, such as every
    shard of a sharded index). The indexes themselves when ``stats`` has no documents
    (nothing will be scored)."""
    if stats.n_docs == 0:
        return list(indexes)
    return [
        index.with_statistics(stats, doc_freqs[term_map])
        for index, term_map in zip(indexes, term_maps, strict=True)
    ]
