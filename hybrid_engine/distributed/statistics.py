"""The BM25 statistics of a sharded collection: every shard's live counts, added up."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hybrid_engine.distributed.worker import BM25Counts


def collection_counts(
    shards: Sequence[BM25Counts],
) -> tuple[tuple[int, int], list[np.ndarray]]:
    """The collection's (documents, total length) and, for each shard, the collection's
    live document count of each of its terms (int64, aligned with its ``terms``).

    A term's count is the sum of its counts over the shards, joined by term string, so a
    shard's BM25 legs score as one index over every shard's live documents would.
    """
    n_docs = sum(shard.n_docs for shard in shards)
    total_length = sum(shard.total_length for shard in shards)
    terms = np.concatenate([np.asarray(shard.terms, dtype=object) for shard in shards])
    counts = np.concatenate([shard.doc_freqs for shard in shards]).astype(np.int64)
    if len(terms) == 0:
        return (n_docs, total_length), [np.zeros(0, np.int64) for _ in shards]
    _, inverse = np.unique(terms, return_inverse=True)
    totals = np.zeros(int(inverse.max()) + 1, np.int64)
    np.add.at(totals, inverse, counts)
    per_shard, start = [], 0
    for shard in shards:
        stop = start + len(shard.terms)
        per_shard.append(totals[inverse[start:stop]])
        start = stop
    return (n_docs, total_length), per_shard
