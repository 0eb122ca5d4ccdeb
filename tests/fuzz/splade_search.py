"""Fuzz the SPLADE index's search: query ``SparseVectors`` of fuzzed offsets, term ids and
weights (wrong dtypes, shapes, out-of-range ids, NaN, negative and huge weights, repeated
terms) and text queries through its encoder, with ``k`` and ``allowed``.

Contract checked: bad input is a ``ValueError`` or ``TypeError``; otherwise rows are well
formed (sorted, unique ids in range, padding at the end) and, for moderate weights, equal the
dot products of the query with the quantized documents (plain numpy).
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

import atheris
import numpy as np
from sparse_oracle import HashingSparseEncoder, dense_rows

from hybrid_engine import SparseVectors, SpladeIndex
from tests.fuzz._arrays import floats, retyped
from tests.fuzz._corpus import WORDS, corpus
from tests.fuzz._harness import EXPECTED, Unexpected, main
from tests.fuzz.bm25_query import allowed_of, k_of

VOCAB = 64


@cache
def index() -> tuple[SpladeIndex, np.ndarray]:
    """The index and its documents' impacts times the scale, float64 ``(n_docs, VOCAB)``."""
    encoder = HashingSparseEncoder(VOCAB)
    built = SpladeIndex.build(corpus(), encoder=encoder)
    docs = dense_rows(built.document_vectors(np.arange(built.num_documents)), VOCAB)
    return built, docs


def vectors_of(fdp: atheris.FuzzedDataProvider) -> tuple[Any, bool]:
    """Query vectors, and whether they are well formed with moderate weights."""
    n = fdp.ConsumeIntInRange(0, 4)
    lengths = [fdp.ConsumeIntInRange(0, 6) for _ in range(n)]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    total = int(offsets[-1])
    terms = np.array([fdp.ConsumeIntInRange(-2, VOCAB + 1) for _ in range(total)], np.int64)
    moderate = fdp.ConsumeBool()
    if moderate:
        weights = np.array([fdp.ConsumeIntInRange(1, 64) / 8 for _ in range(total)])
    else:
        weights = np.array(floats(fdp, total))
    if fdp.ConsumeIntInRange(0, 7) == 0 and total:
        offsets[fdp.ConsumeIntInRange(0, n)] += fdp.ConsumeIntInRange(-3, 3)
    parts = (
        retyped(fdp, offsets, np.int64),
        retyped(fdp, terms, np.int32),
        retyped(fdp, weights, np.float32),
    )
    if fdp.ConsumeIntInRange(0, 15) == 0:
        return parts, False  # a plain tuple, not SparseVectors
    good = (
        moderate
        and all(isinstance(p, np.ndarray) and p.ndim == 1 for p in parts)
        and (parts[0].dtype, parts[1].dtype, parts[2].dtype) == (np.int64, np.int32, np.float32)
        and np.array_equal(parts[0], offsets)
        and len(parts[1]) == total
        and len(parts[2]) == total
        and np.all((terms >= 0) & (terms < VOCAB))
    )
    return SparseVectors(*parts), bool(good)


def expected_scores(docs: np.ndarray, vectors: SparseVectors) -> np.ndarray:
    """float64 ``(n_queries, n_docs)``: each query's dot product with the documents, a term
    given twice counting twice."""
    offsets, terms, weights = vectors
    queries = np.zeros((len(offsets) - 1, VOCAB))
    for row in range(len(offsets) - 1):
        span = slice(offsets[row], offsets[row + 1])
        np.add.at(queries[row], terms[span], weights[span].astype(np.float64))
    return queries @ docs.T


def check_rows(ids: np.ndarray, scores: np.ndarray, n_docs: int) -> None:
    for row_ids, row_scores in zip(ids, scores):
        n = int((row_ids >= 0).sum())
        if not (np.all(row_ids[:n] >= 0) and np.all(row_ids[n:] == -1)):
            raise Unexpected(f"padding inside a row: {row_ids}")
        if np.any(row_ids[:n] >= n_docs) or len(set(row_ids[:n])) != n:
            raise Unexpected(f"ids out of range or repeated: {row_ids}")
        if not (np.all(np.isfinite(row_scores[:n])) and np.all(row_scores[n:] == -np.inf)):
            raise Unexpected(f"scores {row_scores}")
        if np.any(np.diff(row_scores[:n]) > 0):
            raise Unexpected(f"scores not sorted: {row_scores}")


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    built, docs = index()
    k, allowed = k_of(fdp), allowed_of(fdp, built.num_documents)
    if fdp.ConsumeIntInRange(0, 3) == 0:
        texts = [fdp.PickValueInList(list(WORDS)) + fdp.ConsumeUnicode(8) for _ in range(3)]
        try:
            built.search(texts, k, allowed=allowed)
        except EXPECTED:
            pass
        return
    vectors, good = vectors_of(fdp)
    try:
        result = built.search(vectors, k, allowed=allowed)
    except EXPECTED:
        return
    check_rows(result.ids, result.scores, built.num_documents)
    if not good:
        return
    scores = expected_scores(docs, vectors)
    for q in range(len(scores)):
        hits = result.ids[q][result.ids[q] >= 0]
        matched = scores[q] > 0 if allowed is None else (scores[q] > 0) & allowed
        if len(hits) != min(int(k), int(matched.sum())) or not np.all(matched[hits]):
            raise Unexpected(f"query {q}: hits {hits}, matching {np.flatnonzero(matched)}")
        np.testing.assert_allclose(result.scores[q][: len(hits)], scores[q][hits], rtol=1e-5)
        best = np.sort(scores[q][matched])[::-1][: len(hits)]
        np.testing.assert_allclose(result.scores[q][: len(hits)], best, rtol=1e-5)


if __name__ == "__main__":
    main(one_input, sys.argv)
