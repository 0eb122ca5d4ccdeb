"""What a ``ShardedIndex.search`` returns: the hits of each query and which shards answered."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hybrid_engine.live.snapshot import Hit


@dataclass(frozen=True)
class ShardedResult:
    """The hits of a sharded search.

    Attributes
    ----------
    scores : numpy.ndarray
        float32 ``(n_queries, k)``, best first, ``-inf`` padding (as ``SearchResult``).
    hit_lists : list of list of Hit
        Each query's hits, best first (padding left out): id, score, title, text, metadata.
    timings : dict of str to float
        Milliseconds of ``"encode"`` (the query encoders, on the coordinator), ``"shards"``
        (the fan-out of every leg and the wait for the last shard), ``"merge"``, ``"fusion"``,
        ``"rerank"`` and ``"mmr"`` (when used), ``"documents"`` (reading the hits) and
        ``"total"``.
    missing_shards : list of int
        Shards that did not answer (their actor died or is restarting): the hits are those of
        the others. Empty when every shard answered.
    generation : int
        The coordinated commit the search ran on.
    """

    scores: np.ndarray
    hit_lists: list[list[Hit]]
    timings: dict[str, float] = field(default_factory=dict)
    missing_shards: list[int] = field(default_factory=list)
    generation: int = 0

    def __len__(self) -> int:
        return len(self.hit_lists)

    @property
    def doc_ids(self) -> list[list[str]]:
        """The external ids of each query's hits, best first."""
        return [[hit.id for hit in hits] for hits in self.hit_lists]

    def hits(self) -> list[list[Hit]]:
        """Each query's hits, best first (as ``HybridResult.hits``)."""
        return self.hit_lists

    @property
    def complete(self) -> bool:
        """Whether every shard answered."""
        return not self.missing_shards
