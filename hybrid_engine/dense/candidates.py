"""A graph walk's candidates before they are rescored, and one rescoring pool over several
indexes.

A graph search (``VectorStore.search``) walks the graph on the codes, then rescores its best
``oversample * k`` candidates with the float32 vectors: with the vectors on disk
(``mmap="cold"``), one positional read per candidate. An engine of many segments searched
segment by segment would rescore that many candidates in each of them, though the hits of
all of them together are ``k``: at ten segments ten times the reads an index of them all
would make (measured at ten million documents: 2,560 reads for a hybrid's 100 dense hits,
some 180 ms of a cold disk). ``search_pooled`` walks every segment, then rescores only the
best ``size`` candidates of each query over all of them by their approximate scores, as one
index of them all would.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from hybrid_engine._threads import map_parts
from hybrid_engine.dense.links import LinkGraph
from hybrid_engine.result import SearchResult


class Searchable(Protocol):
    """What ``search_pooled`` asks of an index: ``DenseIndex``'s search in its two halves."""

    def candidates(
        self, queries: Any, k: int = ..., *, num_threads: int | None, allowed: np.ndarray | None
    ) -> Candidates | None: ...

    def prefetch(self, candidates: Candidates) -> None: ...

    def rescore(
        self, queries: Any, candidates: Candidates, k: int = ..., *, allowed: np.ndarray | None
    ) -> SearchResult: ...

    def search(
        self, queries: Any, k: int = ..., *, num_threads: int | None, allowed: np.ndarray | None
    ) -> SearchResult: ...


@dataclass(frozen=True)
class Candidates:
    """A graph walk's candidates for a batch of queries, not yet rescored.

    Attributes
    ----------
    ids : numpy.ndarray
        int64 ``(n_queries, c)``: positions, -1 for none.
    scores : numpy.ndarray
        float64 ``(n_queries, c)``: their approximate inner products with the query, from the
        codes (``quantization.Codes.query_constants`` makes those of indexes coded apart
        comparable), -inf for none.
    exact_rows : numpy.ndarray
        bool ``(n_queries,)``: the queries the walk left short (fewer allowed candidates than
        ``k``), to be searched exactly instead; their ``ids`` are -1.
    """

    ids: np.ndarray
    scores: np.ndarray
    exact_rows: np.ndarray

    @classmethod
    def walked(
        cls, graph: LinkGraph, queries: np.ndarray, size: int, threads: int
    ) -> Candidates | None:
        """The ``size`` nearest nodes of prepared ``queries`` by their codes, or None when the
        walk reached fewer than ``size`` nodes (search exactly)."""
        try:
            ids, distances = graph.knn_query(queries, k=size, num_threads=threads)
        except RuntimeError:
            return None
        scores = graph.codes.query_constants(queries)[:, None] - distances.astype(np.float64)
        return cls(ids, scores, np.zeros(len(queries), dtype=bool))

    def only(self, kept: np.ndarray, k: int) -> Candidates:
        """These candidates with only the ``kept`` ones (bool, their shape) left, first in
        walk order; a row with fewer than ``k`` left is an exact row."""
        counts = np.count_nonzero(kept, axis=1)
        order = np.argsort(~kept, axis=1, kind="stable")[:, : max(k, int(counts.max()))]
        left = np.take_along_axis(kept, order, axis=1)
        short = self.exact_rows | (counts < k)
        left &= ~short[:, None]
        return Candidates(
            np.where(left, np.take_along_axis(self.ids, order, axis=1), -1),
            np.where(left, np.take_along_axis(self.scores, order, axis=1), -np.inf),
            short,
        )


def pooled(parts: Sequence[Candidates], size: int) -> list[Candidates]:
    """Each part with only those of its candidates among the best ``size`` of their row over
    all ``parts`` (by approximate score; equal scores by part, then column)."""
    scores = np.concatenate([p.scores for p in parts], axis=1)
    if scores.shape[1] <= size:
        return list(parts)
    best = np.argsort(-scores, axis=1, kind="stable")[:, :size]
    chosen = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(chosen, best, True, axis=1)
    chosen &= np.isfinite(scores)
    out, start = [], 0
    for part in parts:
        stop = start + part.ids.shape[1]
        keep = chosen[:, start:stop]
        out.append(
            dataclasses.replace(
                part,
                ids=np.where(keep, part.ids, -1),
                scores=np.where(keep, part.scores, -np.inf),
            )
        )
        start = stop
    return out


def search_pooled(
    legs: Sequence[tuple[Searchable, np.ndarray | None]],
    queries: np.ndarray,
    k: int,
    num_threads: int | None,
) -> list[SearchResult]:
    """Each leg's top ``k`` of the query vectors ``queries`` under its ``allowed`` mask (as
    ``DenseIndex.search``), the candidates of the legs searched through their graphs
    rescored from one pool: the best of each query over those legs, as many as the largest
    of them rescores alone (``DenseIndex.candidates``), their vectors asked of the disk all
    at once (``DenseIndex.prefetch``). A leg searched exactly (no graph, few allowed) answers
    as ``search`` does. A batch of fewer queries than ``num_threads`` (None: every core)
    searches the legs side by side (``_threads.map_parts``)."""

    def walk(leg: int, threads: int | None) -> Candidates | None:
        index, allowed = legs[leg]
        return index.candidates(queries, k, num_threads=threads, allowed=allowed)

    walks = map_parts(walk, len(legs), len(queries), num_threads)
    walked = [w for w in walks if w is not None]
    if len(walked) > 1:
        walked = pooled(walked, max(w.ids.shape[1] for w in walked))
    rescored = iter(walked)
    chosen = [None if w is None else next(rescored) for w in walks]
    for (index, _), candidates in zip(legs, chosen, strict=True):
        if candidates is not None:  # every leg's reads in flight before any is waited for
            index.prefetch(candidates)

    def answer(leg: int, threads: int | None) -> SearchResult:
        (index, allowed), candidates = legs[leg], chosen[leg]
        if candidates is None:
            return index.search(queries, k, num_threads=threads, allowed=allowed)
        return index.rescore(queries, candidates, k, allowed=allowed)

    return map_parts(answer, len(legs), len(queries), num_threads)
