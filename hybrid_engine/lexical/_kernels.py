"""numba kernels for BM25 search: exhaustive top-k over the postings, sparse or dense.

The postings are in either layout of ``_postings_decode``: the compressed varint runs, or the
decoded impacts.

Queries are CSR: query ``q`` has terms ``q_terms[q_offsets[q]:q_offsets[q + 1]]`` (int32, no
repeats) weighted by ``q_weights`` (float32, the term's count in the query).

All kernels are ``nogil``: callers run them from a thread pool for parallel batches.
"""

from __future__ import annotations

import numba
import numpy as np

# numba's on-disk cache (cache=True) keys a kernel on its own file only: after editing
# _formulas.py, _postings_decode.py or _topk.py, delete hybrid_engine/lexical/__pycache__/*.nbi
# and *.nbc (or touch this file).
from hybrid_engine.lexical._formulas import contribution
from hybrid_engine.lexical._postings_decode import read_posting
from hybrid_engine.lexical._topk import (
    SMALL_K,
    collect_range,
    scan_small,
    select_top_k,
    top_k_radix,
)

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
                doc, tf, pos = read_posting(postings, pos, doc)
                hits[n_hits] = doc
                n_hits += acc[doc] == 0.0
                acc[doc] += contribution(weight, tf, factors[doc], method, k1, delta)
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
                acc[doc - base] += contribution(weight, tf, factors[doc], method, k1, delta)
                if pos < end:
                    doc, tf, pos = read_posting(postings, pos, doc)
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
        float64 ``(n_terms,)`` from ``_formulas.term_idf``.
    doc_freqs : numpy.ndarray
        int32 ``(n_terms,)``: postings per term.
    layout : tuple
        ``(posting_offsets, postings, factors, impact_offsets, impact_docs, impacts,
        use_impacts)``: the compressed postings (int64 ``(n_terms + 1,)``, uint8) with the
        float32 ``(n_docs,)`` output of ``_formulas.doc_factors``, read when ``use_impacts``
        is false; the output of ``_postings_decode.impacts_from_postings``, read when it is
        true (empty arrays otherwise), or any impacts of that shape: SPLADE's are its uint8
        quantized weights, read in place (numba compiles each dtype; an impact is promoted
        to float64 as it is multiplied, so a uint8 scores exactly as its float32 copy would).
    scoring : tuple
        ``(method, k1, delta)``: a code of ``_formulas.METHODS`` and the BM25 parameters
        (``delta`` is used by bm25l and bm25+ only).
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
                    cursor_doc[j], cursor_tf[j], pos = read_posting(postings, pos, 0)
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
