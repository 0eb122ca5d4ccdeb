"""numba kernels of the dense index: approximate and exact scores of vectors (those over an
hnswlib graph file are in ``_hnsw_kernels``). All ``nogil``."""

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
def rescore_top_k(vectors, queries, candidates, ids_out, scores_out):
    """``rescore``, then each query's candidates ranked by exact score, then position, the
    best written into the outs: what ``knn.top_k`` returns, in one call.

    Parameters
    ----------
    vectors, queries, candidates
        As in ``rescore``; a query's candidates are distinct.
    ids_out, scores_out : numpy.ndarray
        int64 and float32, ``(n_queries, k)``, already holding the padding (-1, -inf): the
        first ``min(k, c)`` columns are overwritten (-1 candidates stay padding: they score
        -inf and rank last).
    """
    n_queries, c = candidates.shape
    scores = np.empty((n_queries, c), dtype=np.float32)
    rescore(vectors, queries, candidates, scores)
    width = min(ids_out.shape[1], c)
    for q in range(n_queries):
        # Stable sorts: by position, then by descending score, so ties keep position order.
        by_position = np.argsort(candidates[q], kind="mergesort")
        ranked = by_position[np.argsort(-scores[q][by_position], kind="mergesort")]
        for r in range(width):
            ids_out[q, r] = candidates[q, ranked[r]]
            scores_out[q, r] = scores[q, ranked[r]]
