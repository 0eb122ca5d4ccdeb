"""Greedy packing of sentences into chunks under a token budget, with whole-sentence overlap.

The packer works on units (whole sentences, or the pieces of a sentence over the budget) with
their token counts. Sums of unit counts pick the candidate chunk; the chunk's own text is then
counted again, and the candidate shrunk until that count fits, so a budget holds even where a
tokenizer does not count a join of two sentences as the sum of their counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Counter = Callable[[int, int], int]
"""Tokens of the parent text between two character offsets, special tokens not counted."""


@dataclass(frozen=True)
class Unit:
    """A packable stretch of the parent text.

    Attributes
    ----------
    start, end : int
        Character offsets into the parent text.
    num_tokens : int
        Tokens of ``text[start:end]`` on its own.
    whole : bool
        A whole sentence (False: a piece of an over-long one, never repeated as overlap).
    """

    start: int
    end: int
    num_tokens: int
    whole: bool


def pack(
    units: Sequence[Unit], count: Counter, max_tokens: int, overlap_tokens: int
) -> list[tuple[int, int, int]]:
    """Chunks of consecutive units, each of at most ``max_tokens`` tokens.

    Each chunk takes as many units as fit after the overlap; the next chunk starts with the
    longest run of whole sentences ending the chunk whose text counts at most
    ``overlap_tokens`` tokens, never the chunk's first unit (so a chunk of one sentence gives no
    overlap), fewer when the overlap and the next unit would not fit together.

    Parameters
    ----------
    units : sequence of Unit
        In text order, non-overlapping, each within the budget (or one character over it:
        ``tokens.split_long``).
    count : callable
        ``count(start, end)``: tokens of the parent text between the offsets.
    max_tokens : int
        Most tokens per chunk, >= 1.
    overlap_tokens : int
        Most tokens repeated from the end of one chunk at the start of the next,
        ``0 <= overlap_tokens < max_tokens``.

    Returns
    -------
    list of (int, int, int)
        ``(start, end, num_tokens)`` of each chunk in text order; starts and ends strictly
        increase. Every unit lies in at least one chunk.
    """
    chunks: list[tuple[int, int, int]] = []
    first = fresh = 0  # the chunk's first unit (overlap included), its first new unit
    while fresh < len(units):
        total = sum(u.num_tokens for u in units[first : fresh + 1])
        while total > max_tokens and first < fresh:
            total -= units[first].num_tokens
            first += 1
        stop = fresh + 1
        while stop < len(units) and total + units[stop].num_tokens <= max_tokens:
            total += units[stop].num_tokens
            stop += 1
        num_tokens = count(units[first].start, units[stop - 1].end)
        while num_tokens > max_tokens and stop - first > 1:
            if stop - 1 > fresh:
                stop -= 1
            else:
                first += 1
            num_tokens = count(units[first].start, units[stop - 1].end)
        chunks.append((units[first].start, units[stop - 1].end, num_tokens))
        first, fresh = _overlap(units, first, stop, count, overlap_tokens), stop
    return chunks


def _overlap(
    units: Sequence[Unit], first: int, stop: int, count: Counter, overlap_tokens: int
) -> int:
    """The first unit of the overlap that ends the chunk ``units[first:stop]`` (``stop``
    when there is none)."""
    start, total = stop, 0
    while (
        start - 1 > first
        and units[start - 1].whole
        and total + units[start - 1].num_tokens <= overlap_tokens
    ):
        start -= 1
        total += units[start].num_tokens
    while start < stop and count(units[start].start, units[stop - 1].end) > overlap_tokens:
        start += 1
    return start
