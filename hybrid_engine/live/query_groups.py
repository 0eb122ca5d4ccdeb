"""The queries of one search grouped by the phrases they quote, each group with the
documents it may return: the filter's, narrowed to those holding the group's phrases.

Phrases (``lexical.phrases``) are read only in an engine whose BM25 leg records positions
(``bm25_options={"positions": True}``); elsewhere quotes are punctuation, and a batch is one
group. A phrase narrows every leg, as a filter does: a hit of the dense or SPLADE leg that
lacks the quoted phrase is what the quotes ask to leave out.
"""

from __future__ import annotations

import numpy as np

from hybrid_engine.lexical.phrases import phrase_groups, quoted_phrases, stitched, unquoted
from hybrid_engine.live.snapshot import Masks, Snapshot
from hybrid_engine.result import SearchResult

QueryGroups = list[tuple[Masks, np.ndarray]]
"""``(masks, rows)`` per group: the segments' masks its queries search, and their rows in the
batch (int64, ascending); together the groups hold every row once."""


def query_groups(snapshot: Snapshot, queries: list[str], allowed: Masks) -> QueryGroups:
    """``queries`` grouped by their quoted phrases, each group searching ``allowed`` (a mask
    per segment) narrowed to the documents holding its phrases.

    Raises
    ------
    IndexFormatError
        The positions a phrase reads are malformed (an index loaded without ``verify``).
    """
    if not snapshot.has_positions:
        return [(allowed, np.arange(len(queries), dtype=np.int64))]
    groups: QueryGroups = []
    for phrases, rows in phrase_groups([quoted_phrases(query) for query in queries]):
        masks = allowed
        if phrases:
            masks = [
                segment.bm25.phrase_mask(phrases, mask)  # type: ignore[union-attr]
                for segment, mask in zip(snapshot.segments, allowed, strict=True)
            ]
        groups.append((masks, rows))
    return groups


def search_bm25_groups(
    snapshot: Snapshot,
    queries: list[str],
    groups: QueryGroups,
    k: int,
    num_threads: int | None,
) -> SearchResult:
    """The BM25 leg's top ``k`` of ``queries`` searched by ``groups``: each group within its
    masks, its phrases unquoted (the masks apply them already)."""
    return stitched(
        len(queries),
        groups,
        lambda masks, rows: snapshot.search_bm25(
            [unquoted(queries[row]) for row in rows], k, num_threads, masks
        ),
    )
