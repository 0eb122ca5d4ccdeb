"""Fusion of several retrievers' rankings over the same corpus: RRF and score normalisation."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from hybrid_engine.checks import check_int
from hybrid_engine.result import PAD_ID, SearchResult

METHODS = ("rrf", "minmax", "zscore", "dbsf", "combsum", "combmnz")
"""Fusion methods of ``fuse``."""

DEFAULT_METHOD = "dbsf"
"""``fuse``'s method: the best average nDCG@10 of BM25 + dense over the five local collections
(``benchmarks/reports/fusion_report.py``; docs/fusion.md)."""

RRF_K = 60
"""RRF's rank offset: ``1 / (RRF_K + rank)`` (Cormack et al.'s 60)."""
_CONVEX = ("minmax", "zscore", "dbsf")  # weights scaled to sum to 1
_LAST = np.iinfo(np.int64).max  # sorts padding after every position


def fuse(
    results: Sequence[SearchResult],
    k: int = 10,
    *,
    method: str = DEFAULT_METHOD,
    weights: Sequence[float] | None = None,
    rrf_k: int = RRF_K,
    depth: int | None = None,
) -> SearchResult:
    """Fuse the rankings of several retrievers over the same corpus positions, query by query.

    The candidates of a query are the union of the top-``depth`` hits of its row in every
    result. Each list gives every candidate a value, and the fused score is the weighted sum of
    those values:

    - ``"rrf"``: ``1 / (rrf_k + rank)`` (rank 1-based, the column in the row); 0 when the list
      does not hold the candidate.
    - ``"minmax"``: ``(s - min) / (max - min)`` over the list's top-``depth`` scores.
    - ``"zscore"``: ``(s - mean) / std``, with the sample standard deviation.
    - ``"dbsf"``: distribution-based score fusion as in Qdrant: min-max scaling with
      ``mean -/+ 3 * std`` (sample std) as the bounds, unclipped.
    - ``"combsum"``: the min-max value, weights used as given (Fox and Shaw's CombSUM).
    - ``"combmnz"``: CombSUM times the number of lists holding the candidate.

    A list that does not hold a candidate gives it the bottom of the list's range: its lowest
    normalised value (min-max, CombSUM, CombMNZ, z-score; measured better than the mean), and
    for DBSF, as in Qdrant, 0 (the bound ``mean - 3 * std``; the lowest hit's value instead
    lost 0.0045 nDCG@10 on average). A list whose scores are all equal (one hit included)
    gives its hits 0.5 (0 under z-score); under min-max and z-score that is also its missing
    value, so the list does not reorder the candidates.
    ``"minmax"``, ``"zscore"`` and ``"dbsf"`` scale the weights to sum to 1 (a convex
    combination); the other methods use them as given.

    The default, ``"dbsf"``, had the best average nDCG@10 fusing the top 100 of BM25 and dense
    retrieval on the five local collections (docs/fusion.md;
    ``benchmarks/reports/fusion_report.py``), and the best on SciFact; CombMNZ is within noise
    of it, the others and RRF a little below.

    Parameters
    ----------
    results : sequence of SearchResult
        One per retriever, all with the same number of queries (rows) and ids that are
        positions into the same corpus; widths (``k``) may differ. ``-1`` ids are padding and
        are ignored; an all-padding row gives its query nothing.
    k : int
        Hits per query in the output, >= 1; at most the candidates' count is used: the output
        has ``min(k, c)`` columns, ``c`` the columns of ``results`` together (each cut at
        ``depth``), so a huge ``k`` costs no more than the inputs.
    method : str
        One of ``METHODS``.
    weights : sequence of float, optional
        One per result, finite and >= 0, not all 0. Default: 1 each.
    rrf_k : int
        The RRF rank offset, >= 0 (``"rrf"`` only).
    depth : int, optional
        Hits of each row taken as candidates, >= 1. Default: every column.

    Returns
    -------
    SearchResult
        ``ids`` int64 positions and ``scores`` float32 fused scores, shape ``(n_queries,
        min(k, c))``;
        rows sorted by descending score, equal scores by ascending position, padded with -1 /
        -inf past the number of candidates.

    Raises
    ------
    TypeError
        An item of ``results`` is not a ``SearchResult``, or its ids are not integers.
    ValueError
        No results; results with different numbers of queries; ids below -1 or repeated in a
        row; a non-finite score of a hit; an unknown ``method``; ``weights`` of the wrong
        length, negative, non-finite or all zero; ``k``, ``depth`` or ``rrf_k`` out of range.

    Notes
    -----
    Pure numpy over the whole batch; thread-safe (inputs are only read).
    """
    check_method(method)
    k = check_int("k", k, 1)
    rrf_k = check_int("rrf_k", rrf_k, 0)
    depth = None if depth is None else check_int("depth", depth, 1)
    lists = _check_results(results, depth)
    w = check_weights(weights, len(lists))
    if method in _CONVEX:
        w = w / w.sum()
    n_queries = len(lists[0][0])

    # All lists side by side, each row sorted by position: a candidate is a run of equal ids,
    # represented by the run's first column ("head").
    ids = np.concatenate([list_ids for list_ids, _ in lists], axis=1)
    source = np.concatenate(
        [np.full(list_ids.shape[1], i) for i, (list_ids, _) in enumerate(lists)]
    )
    order = np.argsort(np.where(ids >= 0, ids, _LAST), axis=1, kind="stable")
    ids = np.take_along_axis(ids, order, axis=1)
    source = source[order]
    hit = ids >= 0
    head = hit.copy()
    head[:, 1:] &= ids[:, 1:] != ids[:, :-1]
    head_of = np.maximum.accumulate(np.where(head, np.arange(ids.shape[1]), 0), axis=1)
    rows = np.broadcast_to(np.arange(n_queries)[:, None], ids.shape)

    normalised = [_list_values(list_ids, scores, method, rrf_k) for list_ids, scores in lists]
    values = np.take_along_axis(np.concatenate([v for v, _ in normalised], axis=1), order, axis=1)
    fused = np.zeros(ids.shape)
    held = np.zeros(ids.shape, dtype=np.int64)
    for i, ((_, missing), weight) in enumerate(zip(normalised, w, strict=True)):
        mine = hit & (source == i)
        column = np.repeat(missing[:, None], ids.shape[1], axis=1)
        column[rows[mine], head_of[mine]] = values[mine]
        fused += weight * column
        held[rows[mine], head_of[mine]] += 1
    if method == "combmnz":
        fused *= held

    # Heads are in ascending position within a row: a stable sort by score keeps ties so.
    score32 = np.where(head, fused, -np.inf).astype(np.float32)
    best = np.argsort(-score32, axis=1, kind="stable")[:, :k]
    scores = np.take_along_axis(score32, best, axis=1)
    found = np.take_along_axis(ids, best, axis=1)
    return SearchResult(np.where(np.isfinite(scores), found, PAD_ID), scores)


def _list_values(
    ids: np.ndarray, scores: np.ndarray, method: str, rrf_k: int
) -> tuple[np.ndarray, np.ndarray]:
    """One list's value of each of its hits, shape ``(n_queries, width)``, and the value of a
    candidate it does not hold, shape ``(n_queries,)``."""
    hit = ids >= 0
    if method == "rrf":
        ranks = np.arange(1, ids.shape[1] + 1, dtype=np.float64)
        values = np.broadcast_to(1.0 / (rrf_k + ranks), ids.shape)
        return values, np.zeros(len(ids))
    count = hit.sum(axis=1, keepdims=True)
    if method in ("minmax", "combsum", "combmnz"):
        low = np.where(hit, scores, np.inf).min(axis=1, keepdims=True, initial=np.inf)
        high = np.where(hit, scores, -np.inf).max(axis=1, keepdims=True, initial=-np.inf)
        origin, scale, flat_value = low, high - low, 0.5
    else:
        mean = np.where(hit, scores, 0.0).sum(axis=1, keepdims=True) / np.maximum(count, 1)
        squares = np.where(hit, (scores - mean) ** 2, 0.0).sum(axis=1, keepdims=True)
        std = np.sqrt(squares / np.maximum(count - 1, 1))
        if method == "zscore":
            origin, scale, flat_value = mean, std, 0.0
        else:  # dbsf
            origin, scale, flat_value = mean - 3.0 * std, 6.0 * std, 0.5
    varied = hit & (scale > 0)
    values = np.where(varied, (scores - origin) / np.where(scale > 0, scale, 1.0), flat_value)
    if method == "dbsf":  # Qdrant: a missing point adds nothing, the range's bottom
        return values, np.zeros(len(ids))
    missing = np.where(hit, values, np.inf).min(axis=1, initial=np.inf)
    return values, np.where(count[:, 0] > 0, missing, 0.0)


def _check_results(
    results: Sequence[SearchResult], depth: int | None
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each result's top-``depth`` ids (int64) and scores (float64, 0 on padding), checked."""
    if isinstance(results, SearchResult) or not isinstance(results, Sequence) or not results:
        raise ValueError(
            "results must be a non-empty sequence of SearchResult (one per retriever), got "
            f"{type(results).__name__}"
        )
    lists = []
    for position, result in enumerate(results):
        if not isinstance(result, SearchResult):
            raise TypeError(
                f"results[{position}] is {type(result).__name__}, expected a SearchResult"
            )
        if not np.issubdtype(result.ids.dtype, np.integer):
            raise TypeError(f"results[{position}].ids has dtype {result.ids.dtype}; expected int64")
        if len(result) != len(results[0]):
            raise ValueError(
                f"results[{position}] has {len(result)} queries but results[0] has "
                f"{len(results[0])}: fuse the results of the same query batch"
            )
        ids = np.asarray(result.ids[:, :depth], dtype=np.int64)
        scores = np.asarray(result.scores[:, :depth], dtype=np.float64)
        hit = ids >= 0
        if (ids < PAD_ID).any():
            raise ValueError(f"results[{position}].ids holds values below -1 (the padding id)")
        if not np.isfinite(scores[hit]).all():
            raise ValueError(f"results[{position}] has a NaN or infinite score on a hit")
        ordered = np.sort(np.where(hit, ids, PAD_ID), axis=1)
        if ((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)).any():
            raise ValueError(f"results[{position}] repeats a position within a row")
        lists.append((ids, np.where(hit, scores, 0.0)))  # padding scores out of the sums
    return lists


def check_method(method: str) -> str:
    """``method`` when it is one of ``METHODS``; ValueError naming them otherwise."""
    if method not in METHODS:
        raise ValueError(f"unknown fusion method {method!r}; choose one of {list(METHODS)}")
    return method


def check_weights(weights: Sequence[float] | None, n_lists: int) -> np.ndarray:
    """``fuse``'s ``weights`` as float64, one per list (ones when None); ValueError when of
    another length, not finite, negative or all 0."""
    if weights is None:
        return np.ones(n_lists)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n_lists,):
        raise ValueError(f"weights must hold one number per result ({n_lists}), got {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any() or not math.fsum(w) > 0:
        raise ValueError(f"weights must be finite, >= 0 and not all 0, got {w.tolist()}")
    return w
