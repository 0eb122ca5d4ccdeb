"""What a ``ShardedIndex.search`` returns: the hits of each query and which shards answered."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hybrid_engine.lexical.analysis import Analyzer
from hybrid_engine.pipeline.facets import Facets
from hybrid_engine.pipeline.highlight import Highlighted
from hybrid_engine.pipeline.result import explain_rows
from hybrid_engine.result import Hit, SearchResult


@dataclass(frozen=True)
class ShardedResult(Highlighted):
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
    degraded : list of str
        Empty: a sharded search has no stage that fails without failing it (the accessor of
        ``HybridResult``, so that code reading one reads the other).
    skipped : list of str
        ``["rerank"]`` when ``budget_ms`` left the reranker out (``HybridResult.skipped``).
    facets : list of dict, or None
        With ``facets``: each query's value counts per field over its fused candidates
        (``HybridResult.facets``).
    queries : list of str or None
        The query texts searched (what ``highlights`` marks).
    analyzer : Analyzer or None
        The shards' BM25 analyzer (what decides a match in ``highlights``).
    legs : dict of str to SearchResult or None
        Each leg's ranking merged over the shards, one row per query, documents named by
        their place in the collection's order (what ``explain`` reads).
    seqs : list of list of int or None
        Each hit's place in the collection's order, aligned with ``hit_lists``.
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
    queries: list[str] | None = field(default=None, repr=False, compare=False, kw_only=True)
    analyzer: Analyzer | None = field(default=None, repr=False, compare=False, kw_only=True)
    legs: dict[str, SearchResult] | None = field(
        default=None, repr=False, compare=False, kw_only=True
    )
    seqs: list[list[int]] | None = field(default=None, repr=False, compare=False, kw_only=True)

    def __len__(self) -> int:
        return len(self.hit_lists)

    @property
    def doc_ids(self) -> list[list[str]]:
        """The external ids of each query's hits, best first."""
        return [[hit.id for hit in hits] for hits in self.hit_lists]

    def hits(self) -> list[list[Hit]]:
        """Each query's hits, best first (as ``HybridResult.hits``)."""
        return self.hit_lists

    def explain(self) -> list[list[dict[str, tuple[int, float]]]]:
        """Each hit's place in each leg's ranking over every shard, aligned with ``hits()``
        (``HybridResult.explain``: ``{leg: (rank, score)}``, rank 1-based).

        Raises
        ------
        ValueError
            The result was not returned by ``ShardedIndex.search``.
        """
        if self.legs is None or self.seqs is None:
            raise ValueError("this result was not returned by ShardedIndex.search: no legs")
        return explain_rows(self.legs, self.seqs)

    def _highlighted(
        self,
    ) -> tuple[Sequence[str], list[list[str]], Callable[[str], list[str]]]:
        if self.queries is None or self.analyzer is None:
            raise ValueError("this result was not returned by ShardedIndex.search")
        return (
            self.queries,
            [[hit.text for hit in row] for row in self.hit_lists],
            self.analyzer.analyze,
        )

    @property
    def complete(self) -> bool:
        """Whether every shard answered."""
        return not self.missing_shards
