"""What a ``ShardedIndex.search`` returns: the hits of each query and which shards answered."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hybrid_engine.pipeline.facets import Facets
from hybrid_engine.result import Hit


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
        ``"fields"`` (reading the candidates' metadata), ``"facets"``, ``"rescore"``,
        ``"rerank"`` and ``"mmr"`` (when used), ``"documents"`` (reading the hits) and
        ``"total"``.
    missing_shards : list of int
        Shards that did not answer (their actor died or is restarting): the hits are those of
        the others. Empty when every shard answered.
    generation : int
        The coordinated commit the search ran on.
    shard_timings : dict of int to float
        Each shard that answered: the milliseconds of its own search (its legs, as it timed
        them; ``timings["shards"]`` is the wait for the last one).
    degraded, skipped : list of str
        Empty: a sharded search has no optional stage to fail or skip (the accessors of
        ``HybridResult``, so that code reading one reads the other).
    facets : list of dict, or None
        With ``facets``: each query's value counts per field over its fused candidates
        (``HybridResult.facets``).
    """

    scores: np.ndarray
    hit_lists: list[list[Hit]]
    timings: dict[str, float] = field(default_factory=dict)
    missing_shards: list[int] = field(default_factory=list)
    generation: int = 0
    shard_timings: dict[int, float] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    facets: list[Facets] | None = None

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
