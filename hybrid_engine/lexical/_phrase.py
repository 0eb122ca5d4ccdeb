"""numba kernels of phrase matching over an index built with positions.

Positions layout (``csrc/include/hybrid_engine/postings.hpp``): term ``t``'s are
``positions[position_offsets[t]:position_offsets[t + 1]]``, uint8 LEB128 varints, for each of
its postings in order its term frequency's positions ascending, the first as it is, each later
one as the gap from the one before. A position is the ordinal of the term among its
document's indexed terms.

Every read of the positions is bounds-checked (an index loaded without ``verify`` may hold a
corrupt run): a kernel reports a malformed run instead of reading outside it. The postings are
checked by the caller (``postings_check``) before these kernels read them.
"""

from __future__ import annotations

import numba
import numpy as np

from hybrid_engine.lexical._postings_decode import read_posting

MALFORMED = -1
"""What ``phrase_documents`` returns as its count when a positions run is malformed."""


@numba.njit(cache=True, nogil=True, inline="always")
def _checked_varint(data, pos, end):
    """One varint of ``data[pos:end]``: (value, position after it), or (-1, end) when it
    does not end inside the run (or passes 2^32)."""
    value = np.int64(0)
    shift = 0
    while pos < end and shift <= 28:
        byte = data[pos]
        pos += 1
        value |= np.int64(byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos
    return np.int64(-1), end


@numba.njit(cache=True, nogil=True)
def _term_documents(posting_offsets, postings, term):
    """The documents and term frequencies of ``term``'s postings: two int64 arrays."""
    pos = posting_offsets[term]
    end = posting_offsets[term + 1]
    count = 0
    while pos < end:  # postings are checked: count them first, then decode
        _, _, pos = read_posting(postings, pos, 0)
        count += 1
    docs = np.empty(count, dtype=np.int64)
    tfs = np.empty(count, dtype=np.int64)
    pos = posting_offsets[term]
    doc = np.int64(0)
    for i in range(count):
        doc, tf, pos = read_posting(postings, pos, doc)
        docs[i] = doc
        tfs[i] = tf
    return docs, tfs


@numba.njit(cache=True, nogil=True)
def _intersect(a, b):
    """The values of both ascending int64 arrays, ascending."""
    out = np.empty(min(a.shape[0], b.shape[0]), dtype=np.int64)
    i = j = n = 0
    while i < a.shape[0] and j < b.shape[0]:
        if a[i] < b[j]:
            i += 1
        elif a[i] > b[j]:
            j += 1
        else:
            out[n] = a[i]
            n += 1
            i += 1
            j += 1
    return out[:n]


@numba.njit(cache=True, nogil=True)
def _candidate_positions(term_docs, tfs, position_offsets, positions, term, docs):
    """The positions of ``term`` (its postings decoded: ``term_docs``, ``tfs``) in each of
    ``docs`` (ascending, every one holding it): ``(flat, offsets, ok)``, document
    ``docs[c]``'s positions being ``flat[offsets[c]:offsets[c + 1]]`` (int64, ascending);
    ``ok`` is False when the term's positions run is malformed."""
    offsets = np.zeros(docs.shape[0] + 1, dtype=np.int64)
    total = 0
    c = 0
    for i in range(term_docs.shape[0]):
        if c < docs.shape[0] and term_docs[i] == docs[c]:
            total += tfs[i]
            offsets[c + 1] = total
            c += 1
    flat = np.empty(total, dtype=np.int64)
    pos = position_offsets[term]
    end = position_offsets[term + 1]
    if pos > end or end > positions.shape[0]:
        return flat, offsets, False
    c = 0
    n = 0
    for i in range(term_docs.shape[0]):
        wanted = c < docs.shape[0] and term_docs[i] == docs[c]
        last = np.int64(0)
        for j in range(tfs[i]):
            value, pos = _checked_varint(positions, pos, end)
            if value < 0 or (j > 0 and value == 0):
                return flat, offsets, False
            last += value
            if wanted:
                flat[n] = last
                n += 1
        if wanted:
            c += 1
    return flat, offsets, pos == end


@numba.njit(cache=True, nogil=True, inline="always")
def _holds(flat, begin, end, value):
    """Whether the ascending ``flat[begin:end]`` holds ``value`` (binary search)."""
    lo, hi = begin, end
    while lo < hi:
        mid = (lo + hi) // 2
        if flat[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo < end and flat[lo] == value


@numba.njit(cache=True, nogil=True)
def phrase_documents(posting_offsets, postings, position_offsets, positions, terms):
    """The documents holding ``terms`` (int32 term ids, >= 1 of them, in phrase order) at
    consecutive positions.

    Returns
    -------
    docs : numpy.ndarray
        int64 document ids, ascending (the first ``count``).
    count : int
        How many, or ``MALFORMED`` when a positions run the phrase read is malformed.
    """
    m = terms.shape[0]
    rarest = 0
    for i in range(1, m):
        size_i = posting_offsets[terms[i] + 1] - posting_offsets[terms[i]]
        if size_i < posting_offsets[terms[rarest] + 1] - posting_offsets[terms[rarest]]:
            rarest = i
    decoded = [_term_documents(posting_offsets, postings, terms[rarest])]
    docs = decoded[0][0]
    for i in range(m):
        if i != rarest and docs.shape[0]:
            decoded.append(_term_documents(posting_offsets, postings, terms[i]))
            docs = _intersect(docs, decoded[-1][0])
    if m == 1 or docs.shape[0] == 0:
        return docs, docs.shape[0]
    flats = []
    offsets = []
    for i in range(m):  # decoded holds the rarest term's postings first, then the others'
        d = 0 if i == rarest else (i + 1 if i < rarest else i)
        term_docs, tfs = decoded[d]
        flat, offs, ok = _candidate_positions(
            term_docs, tfs, position_offsets, positions, terms[i], docs
        )
        if not ok:
            return docs, MALFORMED
        flats.append(flat)
        offsets.append(offs)
    out = np.empty(docs.shape[0], dtype=np.int64)
    n = 0
    for c in range(docs.shape[0]):
        first = flats[0]
        for p in range(offsets[0][c], offsets[0][c + 1]):
            start = first[p]
            found = True
            for i in range(1, m):
                if not _holds(flats[i], offsets[i][c], offsets[i][c + 1], start + i):
                    found = False
                    break
            if found:
                out[n] = docs[c]
                n += 1
                break
    return out[:n], n


@numba.njit(cache=True, nogil=True)
def check_positions(posting_offsets, postings, position_offsets, positions):
    """The first term whose positions run is malformed, or -1: each run holds exactly its
    postings' term frequencies of varints, each later one of a posting >= 1, and ends at the
    next term's start. The postings must be well formed."""
    n_terms = posting_offsets.shape[0] - 1
    if position_offsets.shape[0] != n_terms + 1 or position_offsets[0] != 0:
        return 0
    if position_offsets[n_terms] != positions.shape[0]:
        return max(n_terms - 1, 0)
    for term in range(n_terms):
        pos = position_offsets[term]
        end = position_offsets[term + 1]
        if pos > end:
            return term
        _, tfs = _term_documents(posting_offsets, postings, term)
        for i in range(tfs.shape[0]):
            for j in range(tfs[i]):
                value, pos = _checked_varint(positions, pos, end)
                if value < 0 or (j > 0 and value == 0):
                    return term
        if pos != end:
            return term
    return -1
