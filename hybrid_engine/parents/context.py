"""A query's best retrieved chunks packed into a reader's token budget, overlapping chunks of
a parent merged so that no character of a parent is given twice."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from hybrid_engine.parents.result import ChunkHit, ContextSpan


def pack_context(
    chunks: Sequence[ChunkHit], budget: int, count: Callable[[str], int]
) -> list[ContextSpan]:
    """The best spans of one query whose token counts sum to at most ``budget``.

    Chunks are taken best first. A chunk overlapping (or touching) spans already taken from
    its parent merges with them into one span, counted again as a whole; a chunk, merged or
    not, that would take the total over ``budget`` is skipped, and later (lower-scored) ones
    may still fit. A chunk inside a span already taken adds nothing.

    Parameters
    ----------
    chunks : sequence of ChunkHit
        One query's retrieved chunks, best first.
    budget : int
        Most tokens of all spans together.
    count : callable
        Tokens of a text (the chunker's ``count_tokens``).

    Returns
    -------
    list of ContextSpan
        Best score first (a merged span has its best chunk's score); spans of one parent
        never overlap.
    """
    taken: list[ContextSpan] = []
    used = 0
    for chunk in chunks:
        touching = [
            span
            for span in taken
            if span.parent_id == chunk.parent_id
            and span.start <= chunk.end
            and chunk.start <= span.end
        ]
        if any(span.start <= chunk.start and chunk.end <= span.end for span in touching):
            continue
        piece = ContextSpan(chunk.parent_id, chunk.start, chunk.end, chunk.text, chunk.score, 0)
        merged = _union([*touching, piece])
        merged = replace(merged, num_tokens=count(merged.text))
        total = used - sum(span.num_tokens for span in touching) + merged.num_tokens
        if total > budget:
            continue
        taken = [span for span in taken if all(span is not t for t in touching)]
        taken.append(merged)
        used = total
    return sorted(taken, key=lambda span: -span.score)


def _union(spans: list[ContextSpan]) -> ContextSpan:
    """One span of contiguous (overlapping or touching) spans of one parent; its text is
    stitched from theirs, which the exact offsets make exact."""
    ordered = sorted(spans, key=lambda span: span.start)
    text, end = ordered[0].text, ordered[0].end
    for span in ordered[1:]:
        if span.end > end:
            text += span.text[end - span.start :]
            end = span.end
    first = ordered[0]
    return ContextSpan(first.parent_id, first.start, end, text, max(s.score for s in spans), 0)
