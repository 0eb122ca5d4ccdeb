"""numba kernels over the compressed postings: decoding, per-term counts and validation.

Postings layout (written by ``csrc/src/index_builder.cpp``, see ``csrc/include/hybrid_engine/
postings.hpp``): the postings of term ``t`` are ``postings[posting_offsets[t]:
posting_offsets[t + 1]]``, uint8, a run of (doc-id gap, term frequency) pairs, each a LEB128
varint; doc ids ascend and the first gap is the first doc id itself.

For speed, the postings can also be decoded once into an impact layout (``impacts_from_postings``):
per posting a doc id and its precomputed term-frequency component.

All kernels are ``nogil``: callers run them from a thread pool for parallel batches.
"""

from __future__ import annotations

import numba
import numpy as np

# numba's on-disk cache (cache=True) keys a kernel on its own file only: after editing
# _formulas.py, delete hybrid_engine/lexical/__pycache__/*.nbi and *.nbc (or touch this file).
from hybrid_engine.lexical._formulas import term_score


@numba.njit(cache=True, nogil=True, inline="always")
def read_varint(postings, pos):
    """One LEB128 varint at ``pos``: (value, position after it)."""
    byte = postings[pos]
    value = np.int64(byte & 0x7F)
    pos += 1
    shift = 7
    while byte & 0x80:
        byte = postings[pos]
        value |= np.int64(byte & 0x7F) << shift
        pos += 1
        shift += 7
    return value, pos


@numba.njit(cache=True, nogil=True, inline="always")
def read_posting(postings, pos, doc):
    """The posting at ``pos`` of a list whose previous document is ``doc`` (0 before the
    first): (its document, its term frequency, position after it)."""
    gap, pos = read_varint(postings, pos)
    tf, pos = read_varint(postings, pos)
    return doc + gap, tf, pos


@numba.njit(cache=True, nogil=True)
def impacts_from_postings(posting_offsets, postings, doc_freqs, factors, method, k1, delta):
    """Decode all postings into the impact layout: per posting its doc id and score factor.

    Returns
    -------
    impact_offsets : numpy.ndarray
        int64 ``(n_terms + 1,)``: term ``t`` owns entries ``impact_offsets[t]:
        impact_offsets[t + 1]``.
    impact_docs : numpy.ndarray
        int32: doc ids, ascending within a term.
    impacts : numpy.ndarray
        float32: the term-frequency component (``term_score``) of each posting; a query
        term's contribution is ``weight * idf * impact``.
    """
    n_terms = doc_freqs.shape[0]
    impact_offsets = np.zeros(n_terms + 1, dtype=np.int64)
    for term in range(n_terms):
        impact_offsets[term + 1] = impact_offsets[term] + doc_freqs[term]
    impact_docs = np.empty(impact_offsets[n_terms], dtype=np.int32)
    impacts = np.empty(impact_offsets[n_terms], dtype=np.float32)
    for term in range(n_terms):
        pos = posting_offsets[term]
        end = posting_offsets[term + 1]
        doc = np.int64(0)
        i = impact_offsets[term]
        while pos < end:
            doc, tf, pos = read_posting(postings, pos, doc)
            impact_docs[i] = doc
            impacts[i] = term_score(np.float64(tf), factors[doc], method, k1, delta)
            i += 1
    return impact_offsets, impact_docs, impacts


@numba.njit(cache=True, nogil=True)
def allowed_doc_freqs(layout, allowed):
    """For each term, how many allowed documents hold it: int64 ``(n_terms,)``.

    ``layout`` is as in ``_kernels.search_batch`` (the impact entries when cached, else the varint
    postings); ``allowed`` is bool ``(n_docs,)``.
    """
    posting_offsets, postings, _, impact_offsets, impact_docs, _, use_impacts = layout
    n_terms = (impact_offsets if use_impacts else posting_offsets).shape[0] - 1
    counts = np.zeros(n_terms, dtype=np.int64)
    for term in range(n_terms):
        count = 0
        if use_impacts:
            for i in range(impact_offsets[term], impact_offsets[term + 1]):
                count += allowed[impact_docs[i]]
        else:
            pos = posting_offsets[term]
            end = posting_offsets[term + 1]
            doc = np.int64(0)
            while pos < end:
                doc, _, pos = read_posting(postings, pos, doc)
                count += allowed[doc]
        counts[term] = count
    return counts


@numba.njit(cache=True, nogil=True, inline="always")
def _malformed(posting_offsets, postings, doc_freqs, n_docs, term):
    """Whether the postings of ``term`` break the layout.

    Well formed: every varint ends inside the term's byte run, doc ids ascend strictly and are
    below ``n_docs``, frequencies are >= 1, and the count of postings equals ``doc_freqs``.
    """
    pos = posting_offsets[term]
    end = posting_offsets[term + 1]
    if pos > end or end > postings.shape[0]:
        return True
    doc = np.int64(-1)
    count = 0
    while pos < end:
        for field in range(2):
            value = np.int64(0)
            shift = 0
            while True:
                if pos >= end or shift > 28:
                    return True
                byte = postings[pos]
                pos += 1
                value |= np.int64(byte & 0x7F) << shift
                shift += 7
                if not byte & 0x80:
                    break
            if field == 0:
                if value == 0 and doc >= 0:
                    return True
                doc = value if doc < 0 else doc + value
                if doc >= n_docs:
                    return True
            elif value == 0:
                return True
        count += 1
    return count != doc_freqs[term]


@numba.njit(cache=True, nogil=True)
def check_terms(posting_offsets, postings, doc_freqs, n_docs, terms, checked):
    """The first of ``terms`` not yet marked in ``checked`` (uint8 per term) whose postings are
    malformed (``_malformed``), or -1; each well-formed one is marked. Negatives are skipped."""
    for term in terms:
        if term >= 0 and not checked[term]:
            if _malformed(posting_offsets, postings, doc_freqs, n_docs, term):
                return term
            checked[term] = 1
    return -1
