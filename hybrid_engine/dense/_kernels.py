"""numba kernels of the dense index: approximate and exact scores of vectors, and the structural
check of an hnswlib graph file. All ``nogil``."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "nsz", "contract"})
def approx_scores(vectors, queries, out):
    """float32 inner products of a few queries with every vector, summed in any order.

    Faster than a BLAS call for fewer than ~16 queries, on the calling thread; off from the
    exact score by at most ``dim * 2**-24 * |q| * |x|`` (any summation order keeps that bound).

    Parameters
    ----------
    vectors : numpy.ndarray
        float32, shape ``(n, dim)``.
    queries : numpy.ndarray
        float32, shape ``(n_queries, dim)``.
    out : numpy.ndarray
        float32, shape ``(n_queries, n)``: ``out[q, i]`` is about ``queries[q] @ vectors[i]``.
    """
    for i in range(vectors.shape[0]):
        for q in range(queries.shape[0]):
            acc = np.float32(0.0)
            for d in range(vectors.shape[1]):
                acc += vectors[i, d] * queries[q, d]
            out[q, i] = acc


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "nsz", "contract"})
def approx_scores_rows(vectors, rows, queries, out):
    """``approx_scores`` of the vectors ``vectors[rows]`` only, read in place.

    Parameters
    ----------
    vectors : numpy.ndarray
        float32, shape ``(n, dim)``.
    rows : numpy.ndarray
        int64, shape ``(n_rows,)``: positions in ``[0, n)``, not bounds-checked.
    queries : numpy.ndarray
        float32, shape ``(n_queries, dim)``.
    out : numpy.ndarray
        float32, shape ``(n_queries, n_rows)``: ``out[q, j]`` is about
        ``queries[q] @ vectors[rows[j]]``.
    """
    for j in range(rows.shape[0]):
        i = rows[j]
        for q in range(queries.shape[0]):
            acc = np.float32(0.0)
            for d in range(vectors.shape[1]):
                acc += vectors[i, d] * queries[q, d]
            out[q, j] = acc


@numba.njit(cache=True, nogil=True)
def rescore(vectors, queries, candidates, out):
    """Exact inner products of each query with its candidate vectors.

    The exact score is the dot product accumulated in float64 over the float32 components, in
    order, then rounded to float32: it does not depend on how a BLAS blocks its sums, so every
    search path returns the same score for the same (query, vector) pair.

    Parameters
    ----------
    vectors : numpy.ndarray
        float32, shape ``(n, dim)``.
    queries : numpy.ndarray
        float32, shape ``(n_queries, dim)``.
    candidates : numpy.ndarray
        int64, shape ``(n_queries, c)``: rows of ``vectors``, each in ``[0, n)``, or -1 for none.
        Not bounds-checked: callers guarantee the range.
    out : numpy.ndarray
        float32, shape ``(n_queries, c)``: filled with the scores, ``-inf`` where the candidate
        is -1.
    """
    dim = vectors.shape[1]
    for q in range(candidates.shape[0]):
        for j in range(candidates.shape[1]):
            row = candidates[q, j]
            if row < 0:
                out[q, j] = -np.inf
                continue
            acc = 0.0
            for d in range(dim):
                acc += np.float64(vectors[row, d]) * np.float64(queries[q, d])
            out[q, j] = np.float32(acc)


@numba.njit(cache=True, nogil=True)
def check_hnsw_body(words, n, level0_words, max_m0, max_m, max_level, entry_point, label_word):
    """First element whose links, level or label an hnswlib search could trip on.

    hnswlib follows links and labels without bounds checks, so a graph must pass this before
    it is loaded. The body is what hnswlib 0.8 writes after its header: ``n`` level-0 records
    of ``level0_words`` uint32 words (link count, ``max_m0`` links, the vector, the uint64
    label), then per element a uint32 byte size and its upper-level link lists, ``1 + max_m``
    words per level.

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
    levels = np.zeros(n, dtype=np.int64)
    starts = np.zeros(n, dtype=np.int64)
    pos = n * level0_words
    if pos > len(words):
        return n
    for i in range(n):
        if pos >= len(words):
            return i
        size = np.int64(words[pos])
        if size % (4 * upper_words) != 0 or size // (4 * upper_words) > max_level:
            return i
        levels[i] = size // (4 * upper_words)
        starts[i] = pos + 1
        pos += 1 + size // 4
    if pos != len(words):
        return n
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
