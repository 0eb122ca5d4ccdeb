"""numba kernels over the body of an hnswlib 0.8 graph file: its structural check, the table of
where each element's upper-level links start, and a search of the file as it lies (a memory
map), bounds-checked at every read. All ``nogil``.

The body is what ``HierarchicalNSW::saveIndex`` writes after its header: ``n`` level-0 records
of ``level0_words`` uint32 words (link count, ``max_m0`` links, the vector, the uint64 label),
then per element a uint32 byte size and its upper-level link lists, ``1 + max_m`` words (link
count, ``max_m`` links) per level.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _prefetch_codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
    """LLVM ``prefetch`` (read, high locality) of ``array[index]``'s cache line."""
    array_type = signature.args[0]
    array = context.make_array(array_type)(context, builder, args[0])
    pointer = cgutils.get_item_pointer(context, builder, array_type, array, [args[1]])
    byte_pointer = ir.IntType(8).as_pointer()
    i32 = ir.IntType(32)
    function = cgutils.get_or_insert_function(
        builder.module,
        ir.FunctionType(ir.VoidType(), [byte_pointer, i32, i32, i32]),
        "llvm.prefetch.p0i8",
    )
    builder.call(function, [builder.bitcast(pointer, byte_pointer), i32(0), i32(3), i32(1)])
    return context.get_dummy_value()


if numba.config.DISABLE_JIT:

    def _prefetch(array: np.ndarray, index: int) -> None:
        """Nothing to do without the JIT (see the compiled version)."""

else:

    @intrinsic
    def _prefetch(typingctx, array, index):
        """Ask the CPU to start loading ``array[index]`` (no bounds check needed: a prefetch
        never faults). As hnswlib does, it hides the memory latency of a graph walk."""
        return types.void(array, index), _prefetch_codegen


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


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "nsz", "contract"})
def _distance(floats, at, query):
    """hnswlib's inner-product distance ``1 - <x, q>`` (float32) of the vector at word ``at``."""
    acc = np.float32(0.0)
    for d in range(query.shape[0]):
        acc += floats[at + d] * query[d]
    return np.float32(1.0) - acc


@numba.njit(cache=True, nogil=True)
def _push(keys, ids, size, key, node, sign):
    """Push ``(key, node)`` on the binary heap of the first ``size`` entries, the largest
    ``sign * key`` on top; the new size."""
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if sign * keys[parent] >= sign * key:
            break
        keys[i], ids[i] = keys[parent], ids[parent]
        i = parent
    keys[i], ids[i] = key, node
    return size + 1


@numba.njit(cache=True, nogil=True)
def _pop(keys, ids, size, sign):
    """Drop the top of the heap of ``size`` entries (see ``_push``); the new size."""
    size -= 1
    key, node = keys[size], ids[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and sign * keys[child + 1] > sign * keys[child]:
            child += 1
        if sign * keys[child] <= sign * key:
            break
        keys[i], ids[i] = keys[child], ids[child]
        i = child
    keys[i], ids[i] = key, node
    return size


@numba.njit(cache=True, nogil=True)
def search_body(
    words,
    floats,
    n,
    level0_words,
    data_word,
    label_word,
    max_m0,
    max_m,
    max_level,
    entry_point,
    starts,
    queries,
    ef,
    visited,
    tag,
    labels_out,
    distances_out,
):
    """hnswlib's ``searchKnn`` over the file body, every link, count and label checked at use.

    Per query: from the entry point, a greedy descent through levels ``max_level..1`` (move to
    any closer neighbour until none is), then hnswlib's beam search at level 0 with a list of
    ``ef`` (``searchBaseLayerST``: expand the closest unexpanded candidate until it is farther
    than the farthest of the ``ef`` best), keeping the ``k`` best. A node is expanded once
    (``visited``), and the descent moves only to strictly closer nodes, so the work is bounded
    by the graph whatever its links.

    Parameters
    ----------
    words, floats : numpy.ndarray
        The body as uint32 words and as float32 (the same bytes).
    n, level0_words, data_word, label_word, max_m0, max_m, max_level, entry_point : int
        From the header (``data_word``, ``label_word``: word offsets in a level-0 record).
    starts : numpy.ndarray
        int64 ``(n,)``, from ``upper_starts`` (which checked the level sizes).
    queries : numpy.ndarray
        float32 ``(n_queries, dim)``.
    ef : int
        The list size, at least ``k``.
    visited : numpy.ndarray
        int32 ``(n,)``, no entry at or above ``tag``; entries are set to ``tag + q`` for query
        ``q``.
    tag : int
        See ``visited``; ``tag + n_queries`` must fit int32.
    labels_out, distances_out : numpy.ndarray
        int64 and float32 ``(n_queries, k)``: the labels by ascending distance, -1 (and inf)
        past the nodes found.

    Returns
    -------
    int
        -1, or the element whose record is malformed (a link or label out of range, a count
        above its maximum, a node linked at a level above its own, a label found twice), ``n``
        for an entry point below ``max_level``.
    """
    k = labels_out.shape[1]
    upper_words = 1 + max_m
    top_keys = np.empty(ef + 1, dtype=np.float32)
    top_ids = np.empty(ef + 1, dtype=np.int64)
    room = min(n, ef * (max_m0 + 1)) + 1  # a node is pushed once at most: n bounds it
    cand_keys = np.empty(room, dtype=np.float32)
    cand_ids = np.empty(room, dtype=np.int64)
    found = np.empty(ef, dtype=np.int64)
    batch = np.empty(max_m0, dtype=np.int64)
    batch_keys = np.empty(max_m0, dtype=np.float32)
    found_keys = np.empty(ef, dtype=np.float32)
    if entry_point >= n or (words[starts[entry_point] - 1] // (4 * upper_words)) != max_level:
        return n
    for q in range(queries.shape[0]):
        query = queries[q]
        mark = tag + q
        current = entry_point
        current_distance = _distance(floats, current * level0_words + data_word, query)
        for level in range(max_level, 0, -1):
            changed = True
            while changed:
                changed = False
                block = starts[current] + (level - 1) * upper_words
                count = words[block]
                if count > max_m:
                    return current
                for j in range(count):
                    node = np.int64(words[block + 1 + j])
                    if node >= n or words[starts[node] - 1] // (4 * upper_words) < level:
                        return current
                    distance = _distance(floats, node * level0_words + data_word, query)
                    if distance < current_distance:
                        current_distance, current, changed = distance, node, True
        top = _push(top_keys, top_ids, 0, current_distance, current, 1.0)
        cands = _push(cand_keys, cand_ids, 0, current_distance, current, -1.0)
        bound = current_distance
        visited[current] = mark
        while cands > 0:
            if cand_keys[0] > bound:
                break
            node = cand_ids[0]
            cands = _pop(cand_keys, cand_ids, cands, -1.0)
            record = node * level0_words
            count = words[record]
            if count > max_m0:
                return node
            fresh = 0
            for j in range(count):
                neighbour = np.int64(words[record + 1 + j])
                if neighbour >= n:
                    return node
                if visited[neighbour] != mark:
                    visited[neighbour] = mark
                    batch[fresh] = neighbour
                    fresh += 1
            # The distances first, apart from the heaps, their loads started early: they overlap.
            for j in range(fresh):
                _prefetch(floats, batch[j] * level0_words + data_word)
            for j in range(fresh):
                batch_keys[j] = _distance(floats, batch[j] * level0_words + data_word, query)
            for j in range(fresh):
                neighbour, distance = batch[j], batch_keys[j]
                if top < ef or bound > distance:
                    if cands == len(cand_keys):
                        cand_keys = np.concatenate((cand_keys, np.empty_like(cand_keys)))
                        cand_ids = np.concatenate((cand_ids, np.empty_like(cand_ids)))
                    cands = _push(cand_keys, cand_ids, cands, distance, neighbour, -1.0)
                    top = _push(top_keys, top_ids, top, distance, neighbour, 1.0)
                    if top > ef:
                        top = _pop(top_keys, top_ids, top, 1.0)
                    bound = top_keys[0]
        while top > k:
            top = _pop(top_keys, top_ids, top, 1.0)
        size = top
        for i in range(size - 1, -1, -1):  # the farthest is on top
            node = top_ids[0]
            at = node * level0_words + label_word
            label = np.int64(words[at]) | (np.int64(words[at + 1]) << 32)
            if words[at + 1] != 0 or label >= n:
                return node
            found[i], found_keys[i] = label, top_keys[0]
            top = _pop(top_keys, top_ids, top, 1.0)
        unique = np.sort(found[:size])
        for i in range(1, size):
            if unique[i] == unique[i - 1]:
                return n
        for i in range(k):
            labels_out[q, i] = found[i] if i < size else -1
            distances_out[q, i] = found_keys[i] if i < size else np.inf
    return -1
