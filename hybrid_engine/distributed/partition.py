"""Which shard holds a document: a stable hash of its id."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from hybrid_engine.checks import check_int

SEQ_FIELD = "_shard_seq"
"""The metadata field in which each shard stores a document's place in the collection's order
(the order one ``HybridIndex`` over the same documents would hold them in), so merged results
break ties as it does. Hidden from hits; a document's own metadata may not use it."""


def shard_of(doc_id: str, n_shards: int) -> int:
    """The shard of ``doc_id`` among ``n_shards``: the first 8 bytes of its BLAKE2b hash,
    modulo ``n_shards``. The same in every process and Python version (``hash(str)`` is
    salted per process)."""
    digest = hashlib.blake2b(doc_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % n_shards


def group_by_shard(ids: Iterable[str], n_shards: int) -> list[list[int]]:
    """The positions of ``ids`` that go to each of ``n_shards`` shards, in order."""
    check_int("n_shards", n_shards, 1)
    groups: list[list[int]] = [[] for _ in range(n_shards)]
    for position, doc_id in enumerate(ids):
        groups[shard_of(doc_id, n_shards)].append(position)
    return groups
