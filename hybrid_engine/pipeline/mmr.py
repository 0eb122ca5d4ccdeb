"""Maximal marginal relevance: re-order candidates for relevance and diversity (Carbonell and
Goldstein, SIGIR 1998), with the dense vectors of the documents."""

from __future__ import annotations

import numpy as np

from hybrid_engine.checks import check_k
from hybrid_engine.result import PAD_ID, SearchResult


def mmr(
    candidates: SearchResult,
    query_vectors: np.ndarray,
    doc_vectors: np.ndarray,
    k: int = 10,
    *,
    lambda_: float = 0.5,
) -> SearchResult:
    """Pick ``k`` of each row's candidates greedily by maximal marginal relevance.

    At each step the candidate ``d`` with the largest
    ``lambda_ * sim(q, d) - (1 - lambda_) * redundancy(d)`` is picked, where ``redundancy`` is
    the largest ``sim(d, s)`` over the picks ``s`` so far, floored at 0 (a document unlike every
    pick is not redundant, and 0 is also the first pick's), and ``sim`` is the inner product of
    the vectors: the cosine similarity for unit vectors such as ``Encoder``'s or a cosine
    ``DenseIndex``'s. The floor makes each pick's value no larger than the one before.

    Parameters
    ----------
    candidates : SearchResult
        Candidate positions per query, e.g. a fused top-30; their order and scores are not
        used, padding (-1) is skipped.
    query_vectors : numpy.ndarray
        Shape ``(n_queries, dim)``.
    doc_vectors : numpy.ndarray
        Shape ``(n_docs, dim)``, indexed by the candidate positions (``DenseIndex.vectors``,
        which may be a memory map). Only the candidates' rows are read and converted to
        float64, so a call costs memory in the number of candidates, not of documents; the
        other rows need not be finite.
    k : int
        Picks per query, >= 1; rows are padded (-1 / -inf) past the number of candidates.
        The result has ``min(k, candidates' columns)`` columns: a huge ``k`` costs no more
        than the candidates.
    lambda_ : float
        In ``[0, 1]``: 1 ranks by relevance alone, 0 by novelty alone.

    Returns
    -------
    SearchResult
        Picks in order; ``scores`` are the marginal relevance of each pick when it was made,
        which never increases along a row (ties picked by ascending position).

    Raises
    ------
    ValueError
        Shapes that disagree, non-finite query vectors or candidate rows, positions outside
        ``doc_vectors``, ``k < 1`` or ``lambda_`` outside ``[0, 1]``.
    """
    k = check_k(k)
    if not 0.0 <= float(lambda_) <= 1.0:
        raise ValueError(f"lambda_ must be in [0, 1], got {lambda_!r}")
    queries = np.asarray(query_vectors, dtype=np.float64)
    corpus = np.asarray(doc_vectors)  # no copy: only the candidates' rows are converted
    if queries.ndim != 2 or corpus.ndim != 2 or queries.shape[1] != corpus.shape[1]:
        raise ValueError(
            f"query_vectors {queries.shape} and doc_vectors {corpus.shape} must be 2-d with the "
            "same number of columns"
        )
    if len(queries) != len(candidates):
        raise ValueError(
            f"{len(queries)} query vectors for {len(candidates)} rows of candidates; give one "
            "vector per query"
        )
    if not np.isfinite(queries).all():
        raise ValueError("query_vectors must be finite (no NaN or inf)")
    ids = candidates.ids
    used, docs = _candidate_rows(ids, corpus)
    out = SearchResult.empty(len(candidates), min(k, ids.shape[1]))
    for row, (query, row_ids) in enumerate(zip(queries, ids, strict=True)):
        pool = np.unique(row_ids[row_ids != PAD_ID])  # ascending: ties go to the lowest position
        if len(pool) == 0:
            continue
        vectors = docs[np.searchsorted(used, pool)]  # the rows of the pool
        relevance = lambda_ * (vectors @ query)
        redundancy = np.zeros(len(pool))
        free = np.ones(len(pool), dtype=bool)
        n_picks = min(int(k), len(pool))
        for pick in range(n_picks):
            value = np.where(free, relevance - (1.0 - lambda_) * redundancy, -np.inf)
            best = int(np.argmax(value))  # the first maximum: the lowest position
            out.ids[row, pick] = pool[best]
            out.scores[row, pick] = value[best]
            free[best] = False
            redundancy = np.maximum(redundancy, vectors @ vectors[best])
        # Values distinct in float64 may round to one float32: keep the row's tie rule.
        order = np.lexsort((out.ids[row, :n_picks], -out.scores[row, :n_picks]))
        out.ids[row, :n_picks] = out.ids[row, order]
        out.scores[row, :n_picks] = out.scores[row, order]
    return out


def _candidate_rows(ids: np.ndarray, corpus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct candidate positions in ``ids`` (ascending, padding dropped) and their rows
    of ``corpus`` as float64, after checking the positions and the rows' finiteness."""
    if ids.size and (ids.max() >= len(corpus) or ids.min() < PAD_ID):
        raise ValueError(
            f"candidate positions must be in [0, {len(corpus)}) or -1 (padding); pass the "
            "vectors of the index the candidates came from"
        )
    used = np.unique(ids[ids != PAD_ID])
    rows = np.asarray(corpus[used], dtype=np.float64)
    if not np.isfinite(rows).all():
        raise ValueError(
            "doc_vectors must be finite (no NaN or inf) in the candidates' rows; check the "
            "index's vectors"
        )
    return used, rows
