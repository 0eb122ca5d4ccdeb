"""The BM25 variants' formulas: inverse document frequency, document length factors and a
posting's term-frequency component (Kamphuis et al., ECIR 2020).

The numba functions are ``nogil`` and inlined into the kernels that call them (``_kernels``,
``_postings_decode``).
"""

from __future__ import annotations

import numba
import numpy as np

METHODS = {"lucene": 0, "robertson": 1, "atire": 2, "bm25l": 3, "bm25+": 4}
"""BM25 variants (Kamphuis et al., ECIR 2020) and their kernel codes."""


def term_idf(doc_freqs: np.ndarray, n_docs: int, method: str) -> np.ndarray:
    """Inverse document frequency of every term, float64, shape ``(n_terms,)``.

    ``doc_freqs`` (any integer dtype) counts the documents holding each term among ``n_docs``.
    ``robertson`` is clamped at 0 so that very common terms never lower a score. A term in no
    document (possible with collection-wide counts, see ``BM25Index.with_statistics``) gets 0:
    like a term absent from the index, it neither scores nor matches.
    """
    df = doc_freqs.astype(np.float64)
    n = float(n_docs)
    with np.errstate(divide="ignore"):  # df == 0 (atire, bm25+), replaced below
        if method == "lucene":
            idf = np.log1p((n - df + 0.5) / (df + 0.5))
        elif method == "robertson":
            idf = np.log(np.maximum((n - df + 0.5) / (df + 0.5), 1.0))
        elif method == "atire":
            idf = np.log(n / df)
        elif method == "bm25l":
            idf = np.log((n + 1.0) / (df + 0.5))
        elif method == "bm25+":
            idf = np.log((n + 1.0) / df)
        else:
            raise ValueError(f"unknown BM25 method {method!r}; choose one of {sorted(METHODS)}")
    idf[df == 0.0] = 0.0
    return idf


def doc_factors(
    doc_lengths: np.ndarray, avgdl: float, method: str, k1: float, b: float
) -> np.ndarray:
    """Per-document length factor the kernels divide by, float32, shape ``(n_docs,)``.

    ``norm = 1 - b + b * |d| / avgdl``; the factor is ``norm`` for bm25l and ``k1 * norm`` for
    the other variants. ``avgdl`` is the collection's ``total length / number of documents``
    (``BM25Index`` computes it as exactly that division, so that an index given a
    collection's statistics scores like one built over it); ``avgdl == 0`` (every document
    empty) gives ``norm = 1``.
    """
    if avgdl == 0.0:
        norm = np.ones(doc_lengths.shape, dtype=np.float64)
    else:
        norm = 1.0 - b + b * doc_lengths.astype(np.float64) / avgdl
    return (norm if method == "bm25l" else k1 * norm).astype(np.float32)


@numba.njit(cache=True, nogil=True, inline="always")
def term_score(tf, factor, method, k1, delta):
    """Term-frequency component of one posting; ``factor`` from ``doc_factors``."""
    if method <= 1:  # lucene, robertson
        return tf / (tf + factor)
    if method == 2:  # atire
        return tf * (k1 + 1.0) / (tf + factor)
    if method == 3:  # bm25l
        c = tf / factor
        return (k1 + 1.0) * (c + delta) / (k1 + c + delta)
    return (k1 + 1.0) * tf / (tf + factor) + delta  # bm25+


@numba.njit(cache=True, nogil=True, inline="always")
def contribution(weight, tf, factor, method, k1, delta):
    """One posting's score; rounded to float32 like the cached impacts, so both layouts give
    bit-identical scores and the same order of near-ties."""
    return weight * np.float32(term_score(np.float64(tf), factor, method, k1, delta))
