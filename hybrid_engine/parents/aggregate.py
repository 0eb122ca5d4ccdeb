"""Chunk rankings to parent rankings: per-parent score aggregation and span merging."""

from __future__ import annotations

import math
from collections.abc import Sequence

from hybrid_engine.parents.result import ChunkHit

AGGREGATES = ("max", "sum", "first")
"""How a parent's score comes from its retrieved chunks: the best one's (MaxP), their sum,
or its first chunk's (position 0; a parent whose first chunk was not retrieved is left out)."""


def check_aggregate(aggregate: object) -> str:
    """``aggregate`` if it names one of ``AGGREGATES``; ValueError otherwise."""
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {list(AGGREGATES)}, got {aggregate!r}")
    return str(aggregate)


def aggregate_parents(
    chunks: Sequence[ChunkHit], aggregate: str
) -> list[tuple[str, float, list[ChunkHit]]]:
    """Parents ranked by the aggregate of their retrieved chunks' scores.

    Parameters
    ----------
    chunks : sequence of ChunkHit
        One query's retrieved chunks, best first.
    aggregate : {"max", "sum", "first"}
        ``AGGREGATES``.

    Returns
    -------
    list of (parent id, score, chunks)
        Best first; equal scores in the order of each parent's best-ranked chunk. ``chunks``
        are the parent's retrieved chunks, best first.
    """
    groups: dict[str, list[ChunkHit]] = {}
    for chunk in chunks:
        groups.setdefault(chunk.parent_id, []).append(chunk)
    ranked = []
    for rank, (parent, hits) in enumerate(groups.items()):
        if aggregate == "max":
            score = max(hit.score for hit in hits)
        elif aggregate == "sum":
            score = math.fsum(hit.score for hit in hits)
        else:
            firsts = [hit.score for hit in hits if hit.position == 0]
            if not firsts:
                continue
            score = firsts[0]
        ranked.append((-score, rank, parent, hits))
    ranked.sort(key=lambda entry: (entry[0], entry[1]))
    return [(parent, -neg, hits) for neg, _, parent, hits in ranked]


def merge_spans(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The union of character spans, overlapping and touching ones merged, in text order."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged
