"""numba kernels over the body of an hnswlib 0.8 graph file: its structural check and the table
of where each element's upper-level links start. They read graphs hnswlib built (``links``)
and those of format 1 (``dense.format``). All ``nogil``.

The body is what ``HierarchicalNSW::saveIndex`` writes after its header: ``n`` level-0 records
of ``level0_words`` uint32 words (link count, ``max_m0`` links, the vector, the uint64 label),
then per element a uint32 byte size and its upper-level link lists, ``1 + max_m`` words (link
count, ``max_m`` links) per level.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def upper_starts(words, n, level0_words, max_m, max_level):
    """Where each element's upper-level links start, and its number of levels.

    Reads one size word per element (the upper-level part of the file only, about ``8 n``
    bytes for M=16), not the level-0 records.

    Returns
    -------
    starts : numpy.ndarray
        int64 ``(n,)``: word offset in ``words`` of element ``i``'s level-1 list.
    levels : numpy.ndarray
        int64 ``(n,)``: element ``i``'s top level, at most ``max_level``.
    bad : int
        -1 when the sizes are sound and fill the body exactly; else the element at fault, or
        ``n`` for a body of the wrong size.
    """
    upper_words = 1 + max_m
    levels = np.zeros(n, dtype=np.int64)
    starts = np.zeros(n, dtype=np.int64)
    pos = n * level0_words
    if pos > len(words):
        return starts, levels, n
    for i in range(n):
        if pos >= len(words):
            return starts, levels, i
        size = np.int64(words[pos])
        if size % (4 * upper_words) != 0 or size // (4 * upper_words) > max_level:
            return starts, levels, i
        levels[i] = size // (4 * upper_words)
        starts[i] = pos + 1
        pos += 1 + size // 4
    if pos != len(words):
        return starts, levels, n
    return starts, levels, -1


@numba.njit(cache=True, nogil=True)
def check_hnsw_body(words, n, level0_words, max_m0, max_m, max_level, entry_point, label_word):
    """First element whose links, level or label an hnswlib search could trip on.

    hnswlib follows links and labels without bounds checks, so a graph must pass this before
    it is loaded (see the module docstring for the layout).

    Parameters
    ----------
    words : numpy.ndarray
        uint32, the body of the file (little-endian).
    n, level0_words, max_m0, max_m, max_level, entry_point, label_word : int
        From the header (``label_word``: word offset of the label in a level-0 record).

    Returns
    -------
    int
        -1 when the body is sound; else the element at fault, or ``n`` for a fault of the
        whole file (size, entry point).
    """
    upper_words = 1 + max_m
    starts, levels, bad = upper_starts(words, n, level0_words, max_m, max_level)
    if bad >= 0:
        return bad
    if entry_point >= n or levels[entry_point] != max_level:
        return n
    seen = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        record = i * level0_words
        count = words[record]
        if count > max_m0:
            return i
        for j in range(count):
            if words[record + 1 + j] >= n:
                return i
        label = np.uint64(words[record + label_word]) | (
            np.uint64(words[record + label_word + 1]) << np.uint64(32)
        )
        if label >= n or seen[label]:
            return i
        seen[label] = True
        for level in range(1, levels[i] + 1):
            block = starts[i] + (level - 1) * upper_words
            count = words[block]
            if count > max_m:
                return i
            for j in range(count):
                neighbour = words[block + 1 + j]
                if neighbour >= n or levels[neighbour] < level:
                    return i
    return -1
