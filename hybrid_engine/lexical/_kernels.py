"""numba kernels for BM25: postings decoding and scoring.

Postings layout (written by ``csrc/src/index_builder.cpp``, see ``csrc/include/hybrid_engine/
postings.hpp``): the postings of term ``t`` are ``postings[posting_offsets[t]:
posting_offsets[t + 1]]``, uint8, a run of (doc-id gap, term frequency) pairs, each a LEB128
varint; doc ids ascend and the first gap is the first doc id itself.

For speed, the postings can also be decoded once into an impact layout (``impacts_from_postings``):
per posting a doc id and its precomputed term-frequency component.

Queries are CSR: query ``q`` has terms ``q_terms[q_offsets[q]:q_offsets[q + 1]]`` (int32, no
repeats) weighted by ``q_weights`` (float32, the term's count in the query).

All kernels are ``nogil``: callers run them from a thread pool for parallel batches.
"""

from __future__ import annotations

import numba
import numpy as np

# numba's on-disk cache (cache=True) keys a kernel on its own file only: after editing
# _topk.py, delete hybrid_engine/lexical/__pycache__/*.nbi and *.nbc (or touch this file).
from hybrid_engine.lexical._topk import (
    SMALL_K,
    collect_range,
    scan_small,
    select_top_k,
    top_k_radix,
)

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
def _read_varint(postings, pos):
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
def _term_score(tf, factor, method, k1, delta):
    """Term-frequency component of one posting; ``factor`` from ``doc_factors``."""
    if method <= 1:  # lucene, robertson
        return tf / (tf + factor)
    if method == 2:  # atire
        return tf * (k1 + 1.0) / (tf + factor)
    if method == 3:  # bm25l
        c = tf / factor
        return (k1 + 1.0) * (c + delta) / (k1 + c + delta)
    return (k1 + 1.0) * tf / (tf + factor) + delta  # bm25+


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
        float32: the term-frequency component (``_term_score``) of each posting; a query
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
            gap, pos = _read_varint(postings, pos)
            tf, pos = _read_varint(postings, pos)
            doc += gap
            impact_docs[i] = doc
            impacts[i] = _term_score(np.float64(tf), factors[doc], method, k1, delta)
            i += 1
    return impact_offsets, impact_docs, impacts


WINDOW = 1 << 16
"""Documents per window of the dense path: its accumulator (512 KiB) stays in L2."""

CACHED_DOCS = 1 << 19
"""Up to this many documents the accumulator (float64) stays in cache, so tracking hits per
posting is cheap; past it, every first touch of a document is a memory round trip."""


def dense_work(n_docs: int, k: int) -> int:
    """Postings from which a query is scored densely (no per-posting hit tracking, then a scan
    of the accumulator, window by window) rather than sparsely (hits tracked per posting).

    Measured break-evens on this project's benchmarks: with the accumulator in cache, dense
    pays off for small k at half the documents and never for large k; beyond the cache it
    pays off from a thirty-second of the documents.
    """
    if n_docs > CACHED_DOCS:
        return n_docs // 32
    return n_docs // 2 if k <= SMALL_K else 1 << 62  # large k in cache: never dense


_END = np.int64(1) << 62  # cursor doc id past every real document


@numba.njit(cache=True, nogil=True, inline="always")
def _contribution(weight, tf, factor, method, k1, delta):
    """One posting's score; rounded to float32 like the cached impacts, so both layouts give
    bit-identical scores and the same order of near-ties."""
    return weight * np.float32(_term_score(np.float64(tf), factor, method, k1, delta))


@numba.njit(cache=True, nogil=True)
def _accumulate_sparse(terms, weights, layout, scoring, acc, hits):
    """Add every posting of the query terms into ``acc``; list each hit once in ``hits``.

    ``layout`` and ``scoring`` are as in ``search_batch``.
    """
    posting_offsets, postings, factors, impact_offsets, impact_docs, impacts, use_impacts = layout
    method, k1, delta = scoring
    n_hits = 0
    for j in range(terms.shape[0]):
        term = terms[j]
        weight = weights[j]
        if use_impacts:
            for i in range(impact_offsets[term], impact_offsets[term + 1]):
                doc = impact_docs[i]
                # Contributions are > 0, so acc == 0 means "not seen yet": append without a
                # branch, keeping the entry only when new.
                hits[n_hits] = doc
                n_hits += acc[doc] == 0.0
                acc[doc] += weight * impacts[i]
        else:
            pos = posting_offsets[term]
            end = posting_offsets[term + 1]
            doc = np.int64(0)
            while pos < end:
                gap, pos = _read_varint(postings, pos)
                tf, pos = _read_varint(postings, pos)
                doc += gap
                hits[n_hits] = doc
                n_hits += acc[doc] == 0.0
                acc[doc] += _contribution(weight, tf, factors[doc], method, k1, delta)
    return n_hits


@numba.njit(cache=True, nogil=True)
def _accumulate_window(terms, weights, cursors, layout, scoring, base, stop, acc):
    """Add the postings of documents ``base .. stop - 1`` into ``acc[doc - base]``, advancing
    each term's cursor (all postings before ``base`` must already be consumed).

    ``cursors`` is ``(cursor, cursor_doc, cursor_tf)``. Impact layout: ``cursor[j]`` is the
    next entry. Varint layout: ``cursor[j]`` is the byte after the next posting, whose doc id
    and frequency are ``cursor_doc[j]``, ``cursor_tf[j]`` (doc ``_END`` once the list is
    done). ``layout`` and ``scoring`` are as in ``search_batch``. Returns whether any posting
    was added.
    """
    posting_offsets, postings, factors, impact_offsets, impact_docs, impacts, use_impacts = layout
    method, k1, delta = scoring
    cursor, cursor_doc, cursor_tf = cursors
    added = False
    for j in range(terms.shape[0]):
        term = terms[j]
        weight = weights[j]
        if use_impacts:
            begin = cursor[j]
            end = impact_offsets[term + 1]
            if begin < end and impact_docs[end - 1] >= stop:
                end = begin + np.searchsorted(impact_docs[begin:end], stop)
            for i in range(begin, end):  # a counted loop: no per-posting bound check
                acc[impact_docs[i] - base] += weight * impacts[i]
            added |= end != begin
            cursor[j] = end
        else:
            doc = cursor_doc[j]
            if doc >= stop:
                continue
            tf = cursor_tf[j]
            pos = cursor[j]
            end = posting_offsets[term + 1]
            while doc < stop:
                acc[doc - base] += _contribution(weight, tf, factors[doc], method, k1, delta)
                if pos < end:
                    gap, pos = _read_varint(postings, pos)
                    tf, pos = _read_varint(postings, pos)
                    doc += gap
                else:
                    doc = _END
            added = True
            cursor[j], cursor_doc[j], cursor_tf[j] = pos, doc, tf
    return added


@numba.njit(cache=True, nogil=True)
def search_batch(
    q_terms,
    q_weights,
    q_offsets,
    idf,
    doc_freqs,
    layout,
    scoring,
    allowed,
    out_ids,
    out_scores,
    acc,
    hits,
    hit_scores,
    dense_from,
    window,
):
    """Exhaustive BM25 top-k of queries ``0 .. out_ids.shape[0] - 1``.

    Parameters
    ----------
    q_terms, q_weights, q_offsets : numpy.ndarray
        int32, float32, int64: the queries as CSR; ``q_offsets`` has ``n_queries + 1`` entries.
    idf : numpy.ndarray
        float64 ``(n_terms,)`` from ``term_idf``.
    doc_freqs : numpy.ndarray
        int32 ``(n_terms,)``: postings per term.
    layout : tuple
        ``(posting_offsets, postings, factors, impact_offsets, impact_docs, impacts,
        use_impacts)``: the compressed postings (int64 ``(n_terms + 1,)``, uint8) with the
        float32 ``(n_docs,)`` output of ``doc_factors``, read when ``use_impacts`` is false;
        the output of ``impacts_from_postings``, read when it is true (empty arrays
        otherwise).
    scoring : tuple
        ``(method, k1, delta)``: a code of ``METHODS`` and the BM25 parameters (``delta`` is
        used by bm25l and bm25+ only).
    allowed : numpy.ndarray or None
        bool ``(n_docs,)``: only documents with ``allowed[d]`` are hits. The others are
        accumulated like any document, and the selection skips them as candidates
        (``_topk``), so they never take a place in a row; None allows all, at no cost (numba
        compiles that case apart).
    out_ids, out_scores : numpy.ndarray
        int64 and float32 ``(n_queries, k)``, pre-filled with -1 and -inf; rows are written
        best first. A hit's score is the float64 sum of its term contributions in query-term
        order, rounded to float32; rows rank by that score, then ascending position. Hits are
        the documents holding at least one query term of positive idf (every variant's idf
        is positive except robertson's, clamped at 0 for terms in more than half the
        documents).
    acc, hits, hit_scores : numpy.ndarray
        Scratch: float64 ``(n_docs,)``, all zero on entry (and left so), int32 and float32
        ``(n_docs + 1,)``.
    dense_from, window : int
        ``dense_work(n_docs, k)`` and ``WINDOW`` (arguments so tests can force every path).
    """
    n_queries, k = out_ids.shape
    n_docs = acc.shape[0]
    buf_scores = np.empty(min(k, SMALL_K), dtype=np.float32)
    buf_docs = np.empty(min(k, SMALL_K), dtype=np.int64)
    max_terms = 0
    for q in range(n_queries):
        max_terms = max(max_terms, q_offsets[q + 1] - q_offsets[q])
    all_terms = np.empty(max_terms, dtype=np.int64)
    all_weights = np.empty(max_terms, dtype=np.float64)
    cursor = np.empty(max_terms, dtype=np.int64)
    cursor_doc = np.empty(max_terms, dtype=np.int64)
    cursor_tf = np.empty(max_terms, dtype=np.int64)
    cursors = (cursor, cursor_doc, cursor_tf)
    posting_offsets, postings, _, impact_offsets, _, _, use_impacts = layout
    for q in range(n_queries):
        first = q_offsets[q]
        n_terms = q_offsets[q + 1] - first
        terms = all_terms
        weights = all_weights
        m = 0
        work = 0
        for j in range(first, first + n_terms):
            weight = q_weights[j] * idf[q_terms[j]]
            if weight > 0.0:  # robertson's clamped idf: the term neither scores nor matches
                terms[m] = q_terms[j]
                weights[m] = weight
                work += doc_freqs[q_terms[j]]
                m += 1
        terms = terms[:m]
        weights = weights[:m]
        if work < dense_from:
            n_hits = _accumulate_sparse(terms, weights, layout, scoring, acc, hits)
            select_top_k(acc, hits, n_hits, k, out_ids[q], out_scores[q], allowed)
            for i in range(n_hits):
                acc[hits[i]] = 0.0
            continue
        # Dense: one window of documents at a time into the accumulator's first `window`
        # entries, so the same few hundred KiB are reused and stay in cache.
        for j in range(m):
            cursor_doc[j] = _END
            if use_impacts:
                cursor[j] = impact_offsets[terms[j]]
            else:
                pos = posting_offsets[terms[j]]
                if pos < posting_offsets[terms[j] + 1]:
                    cursor_doc[j], pos = _read_varint(postings, pos)
                    cursor_tf[j], pos = _read_varint(postings, pos)
                cursor[j] = pos
        size = 0
        n_hits = 0
        bound = 0.0  # large k: hits at or below the k-th kept score so far cannot enter
        for start in range(0, n_docs, window):
            stop = min(start + window, n_docs)
            if not _accumulate_window(terms, weights, cursors, layout, scoring, start, stop, acc):
                continue
            if k <= SMALL_K:
                size = scan_small(acc, stop - start, start, k, buf_scores, buf_docs, size, allowed)
            else:
                n_hits = collect_range(
                    acc, stop - start, start, bound, hits, hit_scores, n_hits, allowed
                )
                if n_hits >= 2 * k and stop < n_docs:  # keep the best k, raise the bound
                    top_k_radix(hit_scores, hits, n_hits, k, out_ids[q], out_scores[q])
                    hits[:k] = out_ids[q]
                    hit_scores[:k] = out_scores[q]
                    n_hits = k
                    bound = np.float64(out_scores[q, k - 1])
            acc[: stop - start] = 0.0
        if k <= SMALL_K:
            out_ids[q, :size] = buf_docs[:size]
            out_scores[q, :size] = buf_scores[:size]
        else:
            top_k_radix(hit_scores, hits, n_hits, k, out_ids[q], out_scores[q])


@numba.njit(cache=True, nogil=True)
def allowed_doc_freqs(layout, allowed):
    """For each term, how many allowed documents hold it: int64 ``(n_terms,)``.

    ``layout`` is as in ``search_batch`` (the impact entries when cached, else the varint
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
                gap, pos = _read_varint(postings, pos)
                _, pos = _read_varint(postings, pos)
                doc += gap
                count += allowed[doc]
        counts[term] = count
    return counts


@numba.njit(cache=True, nogil=True)
def check_postings(posting_offsets, postings, doc_freqs, n_docs):
    """First term whose postings are malformed, or -1 when all are well formed.

    Well formed: every varint ends inside the term's byte run, doc ids ascend strictly and are
    below ``n_docs``, frequencies are >= 1, and the count of postings equals ``doc_freqs``.
    """
    for term in range(doc_freqs.shape[0]):
        pos = posting_offsets[term]
        end = posting_offsets[term + 1]
        if pos > end or end > postings.shape[0]:
            return term
        doc = np.int64(-1)
        count = 0
        while pos < end:
            for _ in range(2):
                value = np.int64(0)
                shift = 0
                while True:
                    if pos >= end or shift > 28:
                        return term
                    byte = postings[pos]
                    pos += 1
                    value |= np.int64(byte & 0x7F) << shift
                    shift += 7
                    if not byte & 0x80:
                        break
                if _ == 0:
                    if value == 0 and doc >= 0:
                        return term
                    doc = value if doc < 0 else doc + value
                    if doc >= n_docs:
                        return term
                elif value == 0:
                    return term
            count += 1
        if count != doc_freqs[term]:
            return term
    return -1
