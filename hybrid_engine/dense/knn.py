"""Exact inner-product top-k: float32 inner products find candidates, exact scores rank them.

The exact score of a vector for a query is ``_dense_kernels.rescore``'s: the float32 dot product
accumulated in float64, rounded to float32. Hits are ranked by descending exact score, then
ascending position; the HNSW path ranks its candidates by the same rule (``top_k``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hybrid_engine.dense import _kernels as kernels

_SCORES_PER_CHUNK = 1 << 24
"""float32 approximate scores held at once by ``exact_search`` (64 MiB): larger query batches
go through in chunks."""
_BLAS_MIN_QUERIES = 16
"""From this many queries a chunk's approximate scores come from a BLAS matrix product (with
the BLAS library's threads); fewer go through ``_dense_kernels.approx_scores`` on the calling
thread, which is as fast there and never wakes (or oversubscribes) BLAS threads for one query."""


def top_k(
    vectors: np.ndarray,
    queries: np.ndarray,
    candidates: np.ndarray,
    ids_out: np.ndarray,
    scores_out: np.ndarray,
) -> None:
    """Rank each query's candidates by exact score, then position; write the best into the outs.

    Parameters
    ----------
    vectors : numpy.ndarray
        float32, ``(n, dim)``.
    queries : numpy.ndarray
        float32, ``(n_queries, dim)``.
    candidates : numpy.ndarray
        int64, ``(n_queries, c)``: distinct rows of ``vectors`` per query, -1 for none.
    ids_out, scores_out : numpy.ndarray
        int64 and float32, ``(n_queries, k)``, already holding the padding (-1, -inf): the first
        ``min(k, c)`` columns are overwritten.
    """
    kernels.rescore_top_k(vectors, queries, candidates, ids_out, scores_out)


def top_k_taken(
    take: Callable[[np.ndarray], np.ndarray],
    queries: np.ndarray,
    candidates: np.ndarray,
    ids_out: np.ndarray,
    scores_out: np.ndarray,
) -> None:
    """``top_k`` with the candidates' vectors fetched by ``take`` (sorted distinct positions to
    float32 rows) instead of read from an array: the same ranking, ties by position."""
    valid = candidates >= 0
    unique, inverse = np.unique(candidates[valid], return_inverse=True)
    local = np.full(candidates.shape, -1, dtype=np.int64)
    local[valid] = inverse
    top_k(take(unique), queries, local, ids_out, scores_out)
    found = ids_out >= 0
    ids_out[found] = unique[ids_out[found]]


def _approx_scores(
    vectors: np.ndarray, queries: np.ndarray, rows: np.ndarray | None, gathered: np.ndarray | None
) -> np.ndarray:
    """float32 ``(n_queries, n)`` approximate scores of the queries with every vector, or with
    the ``n`` vectors ``vectors[rows]``: by a BLAS product with ``gathered`` (their copy) when
    given, else read in place."""
    if gathered is not None:
        return queries @ gathered.T
    if rows is None and len(queries) >= _BLAS_MIN_QUERIES:
        return queries @ vectors.T
    approx = np.empty((len(queries), len(vectors) if rows is None else len(rows)), np.float32)
    if rows is None:
        kernels.approx_scores(vectors, queries, approx)
    else:
        kernels.approx_scores_rows(vectors, rows, queries, approx)
    return approx


def _candidates(
    vectors: np.ndarray,
    queries: np.ndarray,
    k: int,
    max_norm: float,
    rows: np.ndarray | None,
    gathered: np.ndarray | None,
) -> np.ndarray:
    """Rows that may rank in the exact top ``k`` (``k <= n``) of each query, -1 padded: among
    all of ``vectors``, or among ``rows`` (positions of ``n`` of them) when given
    (``gathered``: see ``_approx_scores``).

    A float32 dot product of ``dim`` terms is off by at most ``e = dim * 2**-24 * |q| * |x|``
    (times 1.01), whatever the order of its sums (BLAS or ``approx_scores``). So the k-th
    largest approximate score is within ``e`` plus half a float32 ulp of the k-th largest exact
    score, and every row whose exact score can reach or tie that one scores, approximately, at
    least the approximate k-th score minus twice that: those rows are the candidates. When an
    approximate score overflowed float32, every row is.
    """
    dim = vectors.shape[1]
    n = len(vectors) if rows is None else len(rows)
    every = np.arange(n, dtype=np.int64) if rows is None else rows
    if k == n:
        return np.tile(every, (len(queries), 1))
    approx = _approx_scores(vectors, queries, rows, gathered)
    if not np.isfinite(approx).all():
        # float32 products overflowed (vectors near the float32 limit): no error bound holds,
        # so every row is a candidate and the exact scores decide.
        return np.tile(every, (len(queries), 1))
    kth = np.partition(approx, n - k, axis=1)[:, n - k].astype(np.float64)
    query_norms = np.sqrt(np.einsum("ij,ij->i", queries, queries, dtype=np.float64))
    error = 1.01 * dim * 2.0**-24 * query_norms * max_norm + dim * 2.0**-125
    slack = 2 * (error + 2.0**-24 * (np.abs(kth) + error))
    hit_rows, cols = np.nonzero(approx >= (kth - slack)[:, None])
    counts = np.bincount(hit_rows, minlength=len(queries))
    out = np.full((len(queries), counts.max()), -1, dtype=np.int64)
    out[hit_rows, np.arange(len(hit_rows)) - (np.cumsum(counts) - counts)[hit_rows]] = (
        cols if rows is None else rows[cols]
    )
    return out


def exact_search(
    vectors: np.ndarray,
    queries: np.ndarray,
    ids_out: np.ndarray,
    scores_out: np.ndarray,
    max_norm: float,
    rows: np.ndarray | None = None,
) -> None:
    """Exact top-k of every query over all ``vectors``, or over ``vectors[rows]`` only, written
    into the outs as positions of ``vectors`` (see ``top_k``).

    ``max_norm`` bounds the Euclidean norm of every row of ``vectors`` (see ``_candidates``).
    ``rows``: int64 ``(n_rows,)``, distinct positions in ``[0, n)``, at least one; the other
    rows are never read. A batch of ``_BLAS_MIN_QUERIES`` or more copies them once (``n_rows``
    float32 rows) for its BLAS products.
    """
    n = len(vectors) if rows is None else len(rows)
    k = min(ids_out.shape[1], n)
    step = max(1, _SCORES_PER_CHUNK // n)
    gathered = None
    if rows is not None and len(queries) >= _BLAS_MIN_QUERIES:
        gathered = vectors[rows]
    for lo in range(0, len(queries), step):
        part = slice(lo, lo + step)
        candidates = _candidates(vectors, queries[part], k, max_norm, rows, gathered)
        top_k(vectors, queries[part], candidates, ids_out[part], scores_out[part])
