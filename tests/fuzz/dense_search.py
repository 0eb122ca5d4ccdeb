"""Fuzz the dense index's search: query vectors of fuzzed dtypes, shapes and values (NaN, inf,
beyond float32, subnormal, all-zero, ragged lists, strings) and text queries through its
encoder, with ``k``, ``allowed`` and ``exact``, on exact and graph indexes of both metrics.

Contract checked: bad input is a ``ValueError`` or ``TypeError``; otherwise rows hold
``min(k, allowed documents)`` hits, sorted, unique and in range, and exact searches equal the
brute-force oracle (``dense_oracle.knn``) up to float32 near-ties and the rounding of a float64
sum (``summation_bounds``).
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

import atheris
import numpy as np
from dense_oracle import HashingEncoder, knn

from hybrid_engine import DenseIndex
from tests.fuzz._arrays import floats, retyped
from tests.fuzz._corpus import WORDS, corpus
from tests.fuzz._harness import EXPECTED, Unexpected, main
from tests.fuzz.bm25_query import allowed_of, k_of
from tests.fuzz.splade_search import check_rows

DIM = 8


@cache
def indexes() -> list[DenseIndex]:
    """Exact and graph indexes, cosine and inner product."""
    encoder = HashingEncoder(DIM)
    docs = corpus()
    return [
        DenseIndex.build(
            docs, encoder=encoder, metric=metric, exact_threshold=threshold, num_threads=1
        )
        for metric in ("cosine", "ip")
        for threshold in (10_000, 8)
    ]


def queries_of(fdp: atheris.FuzzedDataProvider) -> tuple[Any, bool]:
    """Query vectors (or texts), and whether they are a well-formed float matrix."""
    pick = fdp.ConsumeIntInRange(0, 9)
    if pick == 0:
        return [fdp.PickValueInList(list(WORDS)) + fdp.ConsumeUnicode(6) for _ in range(2)], False
    if pick == 1:
        return [[1.0] * DIM, [1.0] * (DIM - 1)], False  # ragged
    if pick == 2:
        return [[0.5] * DIM, "text"], False
    n = fdp.ConsumeIntInRange(0, 4)
    dim = DIM if fdp.ConsumeIntInRange(0, 7) else fdp.ConsumeIntInRange(0, DIM + 2)
    values = np.array(floats(fdp, n * dim), dtype=np.float64).reshape(n, dim)
    if n == 1 and fdp.ConsumeBool():
        values = values[0]
    queries = retyped(fdp, values, np.float32)
    good = (
        isinstance(queries, np.ndarray)
        and queries.dtype == np.float32
        and queries.shape == values.shape
        and dim == DIM
    )
    return queries, bool(good)


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    index = fdp.PickValueInList(indexes())
    k, allowed = k_of(fdp), allowed_of(fdp, index.num_documents)
    exact = fdp.ConsumeBool()
    queries, good = queries_of(fdp)
    try:
        result = index.search(queries, k, exact=exact, allowed=allowed)
    except EXPECTED:
        return
    n_allowed = index.num_documents if allowed is None else int(allowed.sum())
    check_rows(result.ids, result.scores, index.num_documents)
    for row in result.ids:
        if (row >= 0).sum() != min(int(k), n_allowed):
            raise Unexpected(f"{(row >= 0).sum()} hits, expected min({k}, {n_allowed})")
        if allowed is not None and not np.all(allowed[row[row >= 0]]):
            raise Unexpected("a hit outside allowed")
    if not (good and exact):
        return
    matrix = np.atleast_2d(queries)
    vectors = np.asarray(index.vectors)
    candidates = np.flatnonzero(allowed) if allowed is not None else np.arange(len(vectors))
    want_ids, want_scores = knn(vectors[candidates], matrix, int(k), index.metric)
    bounds = summation_bounds(vectors[candidates], matrix, index.metric)
    for q in range(len(matrix)):
        n = int((want_ids[q] >= 0).sum())
        got = result.scores[q][:n]
        np.testing.assert_allclose(got, want_scores[q][:n], rtol=1e-5, atol=1e-6 + bounds[q])


def summation_bounds(vectors: np.ndarray, queries: np.ndarray, metric: str) -> np.ndarray:
    """Per query, how far a float64 sum of its products with any of ``vectors`` may fall from
    the exactly rounded score (``knn``'s): ``1e-6 * max_d sum_i |v_di * q_i|``, the forward
    error bound of a dot product with room to spare. About 1e-6 for unit vectors; for a query
    of components near the float32 maximum whose products cancel, the small terms are lost
    to any sum in float64 (the score is ill-conditioned, not wrong), and so is their order.
    """
    if metric == "cosine":
        vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        queries = queries / np.linalg.norm(queries.astype(np.float64), axis=1, keepdims=True)
    magnitudes = np.abs(queries.astype(np.float64)) @ np.abs(vectors.astype(np.float64)).T
    return 1e-6 * magnitudes.max(axis=1, initial=0.0)


if __name__ == "__main__":
    main(one_input, sys.argv)
