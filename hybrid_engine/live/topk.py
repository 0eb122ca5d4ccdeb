"""Merging the top-k of several segments into the top-k of the collection."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hybrid_engine.result import PAD_ID, SearchResult


def merge_top_k(parts: Sequence[SearchResult], bases: Sequence[int], k: int) -> SearchResult:
    """The best ``k`` of each row over ``parts`` (one per segment, local positions), their ids
    shifted by the segment's ``bases`` entry: rows by descending score, equal scores by
    ascending global position (a single index's order), padding (-1, -inf) last.

    ``min(k, columns of all parts)`` columns: never wider than the hits the parts hold."""
    k = min(k, sum(p.ids.shape[1] for p in parts))
    if len(parts) == 1:
        only = parts[0]
        if bases[0] == 0:
            return _cut(only, k)
        ids = np.where(only.ids == PAD_ID, PAD_ID, only.ids + bases[0])
        return _cut(SearchResult(ids, only.scores), k)
    ids = np.concatenate(
        [
            np.where(p.ids == PAD_ID, PAD_ID, p.ids + base)
            for p, base in zip(parts, bases, strict=True)
        ],
        axis=1,
    )
    scores = np.concatenate([p.scores for p in parts], axis=1)
    # Padding sorts last: its score is -inf and its id key is the largest.
    id_key = np.where(ids == PAD_ID, np.iinfo(np.int64).max, ids)
    order = np.lexsort((id_key, -scores), axis=1)[:, :k]
    merged = SearchResult(
        np.take_along_axis(ids, order, axis=1), np.take_along_axis(scores, order, axis=1)
    )
    return _cut(merged, k)


def _cut(result: SearchResult, k: int) -> SearchResult:
    """``result`` with exactly ``k`` columns (padded when narrower)."""
    width = result.ids.shape[1]
    if width == k:
        return result
    if width > k:
        return SearchResult(result.ids[:, :k], result.scores[:, :k])
    out = SearchResult.empty(len(result), k)
    out.ids[:, :width] = result.ids
    out.scores[:, :width] = result.scores
    return out
