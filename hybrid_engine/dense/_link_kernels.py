"""numba kernels of a links-only HNSW graph (``links.LinkGraph``): its search over quantized
codes (or the float32 vectors), its check, and the conversions from and to hnswlib's file. All
``nogil``.

The graph, in position order (a node is its document's position):

* ``links0``: uint32 ``(n, 1 + max_m0)``, node ``i``'s level-0 link count, then its links;
* ``upper``: uint32 ``(blocks, 1 + max_m)``, one block (count, links) per node and level above 0;
* ``upper_start``: int64 ``(n + 1,)``, node ``i``'s level ``l >= 1`` block is
  ``upper[upper_start[i] + l - 1]``; it has ``upper_start[i + 1] - upper_start[i]`` levels above 0.

hnswlib's search (``searchKnn``) is the one run here: a greedy descent through the upper levels,
then a beam of ``ef`` at level 0; the distance is ``-similarity`` of the codes.
"""

from __future__ import annotations

import numba
import numpy as np

from hybrid_engine.dense._prefetch import prefetch, prefetch_row


@numba.njit(cache=True, nogil=True, inline="always")
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


@numba.njit(cache=True, nogil=True, inline="always")
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


@numba.njit(cache=True, nogil=True, inline="always")
def _popcount(x):
    """Set bits of the uint64 ``x`` (SWAR)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((x * np.uint64(0x0101010101010101)) >> np.uint64(56))


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "nsz", "contract"})
def _dot(row, q):
    """``<row, q>`` in float32 (``row`` float32 or int8, contiguous)."""
    acc = np.float32(0.0)
    for d in range(q.shape[0]):
        acc += np.float32(row[d]) * q[d]
    return acc


@numba.njit(cache=True, nogil=True)
def _bit_estimate(row, factor, planes, qpar):
    """The binary estimate of ``quantization``: ``factor * <4-bit query, +-1 signs>``."""
    ones = np.int64(0)
    weighted = np.int64(0)
    for w in range(row.shape[0]):
        word = row[w]
        ones += _popcount(word)
        for j in range(planes.shape[0]):
            weighted += _popcount(word & planes[j, w]) << j
    inner = qpar[0] * np.float32(ones) + qpar[1] * np.float32(weighted)  # ~ sum of q over ones
    return factor * (np.float32(2.0) * inner - qpar[2])


@numba.njit(cache=True, nogil=True)
def _distances(kind, nodes, count, floats, bytes_, bits, factors, q, planes, qpar, out):
    """``out[i] = -similarity`` of query ``q`` with the code of ``nodes[i]``, ``i < count``:
    the approximate inner product (float32 ``kind`` 0, int8 1, binary 2; see
    ``quantization``), up to a constant of the query. The loads of every code (each of its
    lines) are started first, so they overlap (hnswlib's prefetching). One call per expanded
    node: a call passes its arrays with a reference count each, which would cost more than a
    distance."""
    for i in range(count):
        if kind == 0:
            prefetch_row(floats[nodes[i]])
        elif kind == 1:
            prefetch_row(bytes_[nodes[i]])
        else:
            prefetch_row(bits[nodes[i]])
    for i in range(count):
        node = nodes[i]
        if kind == 0:
            out[i] = -_dot(floats[node], q)
        elif kind == 1:
            out[i] = -_dot(bytes_[node], q)
        else:
            out[i] = -_bit_estimate(bits[node], factors[node], planes, qpar)


@numba.njit(cache=True, nogil=True)
def search_links(
    links0,
    upper,
    upper_start,
    max_level,
    entry_point,
    kind,
    floats,
    bytes_,
    bits,
    factors,
    queries,
    planes,
    qpars,
    ef,
    visited,
    tag,
    labels_out,
    distances_out,
):
    """hnswlib's ``searchKnn`` over the graph and codes, every link and count checked at use.

    Parameters
    ----------
    links0, upper, upper_start : numpy.ndarray
        The graph (module docstring); ``upper_start`` checked (ascending, within ``upper``).
    max_level, entry_point : int
        The top level and the node searches start from (at that level: checked).
    kind : int
        0 float32 ``floats`` ``(n, dim)``, 1 int8 ``bytes_`` ``(n, dim)``, 2 binary ``bits``
        ``(n, words)`` and ``factors`` ``(n,)`` (the others may be empty).
    queries : numpy.ndarray
        float32 ``(n_queries, dim)`` (``Codes.query_floats``).
    planes, qpars : numpy.ndarray
        Binary only: ``Codes.query_planes``.
    ef : int
        The list size, at least ``k``.
    visited : numpy.ndarray
        int32 ``(n,)``, no entry at or above ``tag``; entries are set to ``tag + q`` for query
        ``q``.
    tag : int
        See ``visited``; ``tag + n_queries`` must fit int32.
    labels_out, distances_out : numpy.ndarray
        int64 and float32 ``(n_queries, k)``: nodes by ascending distance (``-similarity``),
        -1 (and inf) past the nodes found.

    Returns
    -------
    int
        -1, or the node whose links are malformed (a link out of range, a count above its
        maximum, a node linked at a level above its own).
    """
    n = links0.shape[0]
    max_m0 = links0.shape[1] - 1
    max_m = upper.shape[1] - 1
    k = labels_out.shape[1]
    top_keys = np.empty(ef + 1, dtype=np.float32)
    top_ids = np.empty(ef + 1, dtype=np.int64)
    room = min(n, ef * (max_m0 + 1)) + 1  # a node is pushed once at most: n bounds it
    cand_keys = np.empty(room, dtype=np.float32)
    cand_ids = np.empty(room, dtype=np.int64)
    width = max(max_m0, max_m, 1)
    batch = np.empty(width, dtype=np.int64)
    batch_keys = np.empty(width, dtype=np.float32)
    for q in range(queries.shape[0]):
        query = queries[q]
        plane = planes[q]
        qpar = qpars[q]
        mark = tag + q
        current = np.int64(entry_point)
        batch[0] = current
        _distances(kind, batch, 1, floats, bytes_, bits, factors, query, plane, qpar, batch_keys)
        current_distance = batch_keys[0]
        for level in range(max_level, 0, -1):
            changed = True
            while changed:
                changed = False
                block = upper_start[current] + level - 1
                count = upper[block, 0]
                if count > max_m:
                    return current
                for j in range(count):
                    node = np.int64(upper[block, 1 + j])
                    if node >= n or upper_start[node + 1] - upper_start[node] < level:
                        return current
                    batch[j] = node
                _distances(
                    kind, batch, count, floats, bytes_, bits, factors, query, plane, qpar,
                    batch_keys,
                )  # fmt: skip
                for j in range(count):
                    if batch_keys[j] < current_distance:
                        current_distance, current, changed = batch_keys[j], batch[j], True
        top = _push(top_keys, top_ids, 0, current_distance, current, 1.0)
        cands = _push(cand_keys, cand_ids, 0, current_distance, current, -1.0)
        bound = current_distance
        visited[current] = mark
        while cands > 0:
            if cand_keys[0] > bound:
                break
            node = cand_ids[0]
            cands = _pop(cand_keys, cand_ids, cands, -1.0)
            count = links0[node, 0]
            if count > max_m0:
                return node
            fresh = 0
            for j in range(count):
                neighbour = np.int64(links0[node, 1 + j])
                if neighbour >= n:
                    return node
                if visited[neighbour] != mark:
                    visited[neighbour] = mark
                    batch[fresh] = neighbour
                    fresh += 1
                    prefetch(links0[neighbour], 0)  # its links, read if it is expanded
            # The distances first, apart from the heaps, their loads started early: they overlap.
            _distances(
                kind, batch, fresh, floats, bytes_, bits, factors, query, plane, qpar, batch_keys
            )
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
        for i in range(k):
            labels_out[q, i] = -1
            distances_out[q, i] = np.inf
        for i in range(size - 1, -1, -1):  # the farthest is on top
            labels_out[q, i], distances_out[q, i] = top_ids[0], top_keys[0]
            top = _pop(top_keys, top_ids, top, 1.0)
    return -1


@numba.njit(cache=True, nogil=True)
def check_links(links0, upper, upper_start):
    """The first node whose links a search could trip on (a count above its maximum, a link
    out of range, an upper link to a node without that level), or -1; ``upper_start`` must be
    checked first (``LinkGraph.check_starts``)."""
    n = links0.shape[0]
    max_m0 = links0.shape[1] - 1
    max_m = upper.shape[1] - 1
    for i in range(n):
        count = links0[i, 0]
        if count > max_m0:
            return i
        for j in range(count):
            if links0[i, 1 + j] >= n:
                return i
        for level in range(1, upper_start[i + 1] - upper_start[i] + 1):
            block = upper_start[i] + level - 1
            count = upper[block, 0]
            if count > max_m:
                return i
            for j in range(count):
                node = upper[block, 1 + j]
                if node >= n or upper_start[node + 1] - upper_start[node] < level:
                    return i
    return -1


@numba.njit(cache=True, nogil=True)
def from_hnsw_body(words, n, level0_words, label_word, max_m0, max_m, starts, levels):
    """The graph (module docstring) of a checked hnswlib body (``_hnsw_kernels``), its nodes
    renumbered by label: ``links0``, ``upper``, ``upper_start`` and each label's former
    internal id."""
    internal = np.empty(n, dtype=np.int64)
    label_of = np.empty(n, dtype=np.int64)
    for i in range(n):
        at = i * level0_words + label_word
        label = np.int64(words[at])
        label_of[i] = label
        internal[label] = i
    upper_start = np.zeros(n + 1, dtype=np.int64)
    for p in range(n):
        upper_start[p + 1] = upper_start[p] + levels[internal[p]]
    links0 = np.empty((n, 1 + max_m0), dtype=np.uint32)
    upper = np.empty((upper_start[n], 1 + max_m), dtype=np.uint32)
    for p in range(n):
        i = internal[p]
        record = i * level0_words
        count = words[record]
        links0[p, 0] = count
        for j in range(max_m0):
            links0[p, 1 + j] = label_of[words[record + 1 + j]] if j < count else 0
        for level in range(levels[i]):
            block = starts[i] + level * (1 + max_m)
            count = words[block]
            row = upper_start[p] + level
            upper[row, 0] = count
            for j in range(max_m):
                upper[row, 1 + j] = label_of[words[block + 1 + j]] if j < count else 0
    return links0, upper, upper_start, internal


@numba.njit(cache=True, nogil=True)
def hnsw_upper_words(upper, upper_start):
    """The upper-level part of an hnswlib body for the graph: per node a byte size, then its
    blocks."""
    n = upper_start.shape[0] - 1
    width = upper.shape[1]
    out = np.empty(n + upper.shape[0] * width, dtype=np.uint32)
    pos = 0
    for i in range(n):
        blocks = upper_start[i + 1] - upper_start[i]
        out[pos] = blocks * width * 4
        pos += 1
        for b in range(blocks):
            for j in range(width):
                out[pos] = upper[upper_start[i] + b, j]
                pos += 1
    return out
