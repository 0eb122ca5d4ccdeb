"""numba kernels for BM25: postings decoding, scoring and exact top-k selection.

Postings layout (written by ``csrc/src/index_builder.cpp``, see ``csrc/include/hybrid_engine/
postings.hpp``): the postings of term ``t`` are ``postings[posting_offsets[t]:
posting_offsets[t + 1]]``, uint8, a run of (doc-id gap, term frequency) pairs, each a LEB128
varint; doc ids ascend and the first gap is the first doc id itself.

Queries are CSR: query ``q`` has terms ``q_terms[q_offsets[q]:q_offsets[q + 1]]`` (int32, no
repeats) weighted by ``q_weights`` (float32, the term's count in the query).

All kernels are ``nogil``: callers run them from a thread pool for parallel batches.
"""

from __future__ import annotations

import numba
import numpy as np

METHODS = {"lucene": 0, "robertson": 1, "atire": 2, "bm25l": 3, "bm25+": 4}
"""BM25 variants (Kamphuis et al., ECIR 2020) and their kernel codes."""


def term_idf(doc_freqs: np.ndarray, n_docs: int, method: str) -> np.ndarray:
    """Inverse document frequency of every term, float64, shape ``(n_terms,)``.

    ``robertson`` is clamped at 0 so that very common terms never lower a score.
    """
    df = doc_freqs.astype(np.float64)
    n = float(n_docs)
    if method == "lucene":
        return np.log1p((n - df + 0.5) / (df + 0.5))
    if method == "robertson":
        return np.log(np.maximum((n - df + 0.5) / (df + 0.5), 1.0))
    if method == "atire":
        return np.log(n / df)
    if method == "bm25l":
        return np.log((n + 1.0) / (df + 0.5))
    if method == "bm25+":
        return np.log((n + 1.0) / df)
    raise ValueError(f"unknown BM25 method {method!r}; choose one of {sorted(METHODS)}")


def doc_factors(doc_lengths: np.ndarray, method: str, k1: float, b: float) -> np.ndarray:
    """Per-document length factor the kernels divide by, float32, shape ``(n_docs,)``.

    ``norm = 1 - b + b * |d| / avgdl``; the factor is ``norm`` for bm25l and ``k1 * norm`` for
    the other variants. A corpus whose documents are all empty has ``norm = 1``.
    """
    avgdl = float(doc_lengths.mean()) if doc_lengths.size else 0.0
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


@numba.njit(cache=True, nogil=True, inline="always")
def _better(score_a, doc_a, score_b, doc_b):
    """Whether hit a ranks before hit b: higher score, then lower position."""
    return score_a > score_b or (score_a == score_b and doc_a < doc_b)


@numba.njit(cache=True, nogil=True)
def _sift_down(heap_scores, heap_docs, size, i):
    """Restore the heap property below ``i``; the root holds the worst of the kept hits."""
    while True:
        worst = i
        left = 2 * i + 1
        right = left + 1
        if left < size and _better(
            heap_scores[worst], heap_docs[worst], heap_scores[left], heap_docs[left]
        ):
            worst = left
        if right < size and _better(
            heap_scores[worst], heap_docs[worst], heap_scores[right], heap_docs[right]
        ):
            worst = right
        if worst == i:
            return
        heap_scores[i], heap_scores[worst] = heap_scores[worst], heap_scores[i]
        heap_docs[i], heap_docs[worst] = heap_docs[worst], heap_docs[i]
        i = worst


@numba.njit(cache=True, nogil=True)
def _top_k_heap(acc, touched, n_touched, k, out_ids, out_scores):
    """Top-k by a bounded heap: best when k is small next to the number of hits."""
    k = min(k, n_touched)
    heap_scores = np.empty(k, dtype=np.float64)
    heap_docs = np.empty(k, dtype=np.int64)
    for i in range(k):
        heap_scores[i] = acc[touched[i]]
        heap_docs[i] = touched[i]
    for j in range(k // 2 - 1, -1, -1):
        _sift_down(heap_scores, heap_docs, k, j)
    for i in range(k, n_touched):
        doc = touched[i]
        score = acc[doc]
        if _better(score, doc, heap_scores[0], heap_docs[0]):
            heap_scores[0] = score
            heap_docs[0] = doc
            _sift_down(heap_scores, heap_docs, k, 0)
    # Pop the worst into the last free slot until the heap is empty: the row ends up sorted.
    for last in range(k - 1, -1, -1):
        out_ids[last] = heap_docs[0]
        out_scores[last] = heap_scores[0]
        heap_scores[0] = heap_scores[last]
        heap_docs[0] = heap_docs[last]
        _sift_down(heap_scores, heap_docs, last, 0)


_RADIX_BITS = 11
_RADIX_PASSES = 6  # 6 * 11 >= 64


@numba.njit(cache=True, nogil=True)
def _top_k_radix(acc, touched, n_touched, k, out_ids, out_scores):
    """Top-k by radix sort: branch-free, best when k is large.

    Each hit gets the 64-bit key ``(~float32_bits(score) << 32) | doc``; scores are >= 0, so
    ascending keys rank by descending float32 score, then ascending position. Hits whose
    float32 scores are equal are then reordered by their exact float64 score. A histogram of
    the top key bits first drops the hits that cannot reach the top k.
    """
    scores32 = np.empty(n_touched, dtype=np.float32)
    for i in range(n_touched):
        scores32[i] = acc[touched[i]]
    bits = scores32.view(np.uint32)
    keys = np.empty(n_touched, dtype=np.uint64)
    for i in range(n_touched):
        keys[i] = (np.uint64(0xFFFFFFFF - bits[i]) << np.uint64(32)) | np.uint64(touched[i])
    # Keep the hits whose top digit is at most the digit of the k-th best.
    top_shift = np.uint64(64 - _RADIX_BITS)
    hist = np.zeros(1 << _RADIX_BITS, dtype=np.int64)
    for i in range(n_touched):
        hist[keys[i] >> top_shift] += 1
    cutoff = 0
    seen = hist[0]
    while seen < k:
        cutoff += 1
        seen += hist[cutoff]
    m = 0
    for i in range(n_touched):
        if (keys[i] >> top_shift) <= cutoff:
            keys[m] = keys[i]
            m += 1
    # LSD radix sort of the survivors, skipping digits that all keys share.
    keys = keys[:m]
    spare = np.empty(m, dtype=np.uint64)
    mask = np.uint64((1 << _RADIX_BITS) - 1)
    for p in range(_RADIX_PASSES):
        shift = np.uint64(p * _RADIX_BITS)
        hist[:] = 0
        for i in range(m):
            hist[(keys[i] >> shift) & mask] += 1
        if hist[(keys[0] >> shift) & mask] == m:
            continue
        total = 0
        for d in range(hist.shape[0]):
            count = hist[d]
            hist[d] = total
            total += count
        for i in range(m):
            d = (keys[i] >> shift) & mask
            spare[hist[d]] = keys[i]
            hist[d] += 1
        keys, spare = spare, keys
    # Exact order inside runs of equal float32 scores (already by ascending position).
    docs = np.empty(m, dtype=np.int64)
    for i in range(m):
        docs[i] = np.int64(keys[i] & np.uint64(0xFFFFFFFF))
    start = 0
    while start < k:
        stop = start + 1
        while stop < m and (keys[stop] >> np.uint64(32)) == (keys[start] >> np.uint64(32)):
            stop += 1
        for i in range(start + 1, stop):  # stable insertion sort by descending exact score
            doc = docs[i]
            j = i
            while j > start and acc[docs[j - 1]] < acc[doc]:
                docs[j] = docs[j - 1]
                j -= 1
            docs[j] = doc
        start = stop
    for r in range(k):
        out_ids[r] = docs[r]
        out_scores[r] = acc[docs[r]]


HEAP_MAX_K = 32
"""Up to this k the heap selects the top k; above it the radix sort does."""


@numba.njit(cache=True, nogil=True)
def select_top_k(acc, touched, n_touched, k, out_ids, out_scores):
    """Write the exact top-k hits (or all, when fewer) into one output row, best first.

    Parameters
    ----------
    acc : numpy.ndarray
        float64 ``(n_docs,)``: scores, valid at the touched positions; all must be >= 0.
    touched : numpy.ndarray
        int32: the hit positions are ``touched[:n_touched]``, each once.
    out_ids, out_scores : numpy.ndarray
        int64 and float32 ``(k,)``; entries past the number of hits are left as they are.
    """
    if n_touched == 0:
        return
    if k <= HEAP_MAX_K or n_touched <= k:
        _top_k_heap(acc, touched, n_touched, k, out_ids, out_scores)
    else:
        _top_k_radix(acc, touched, n_touched, k, out_ids, out_scores)


@numba.njit(cache=True, nogil=True)
def search_batch(
    q_terms,
    q_weights,
    q_offsets,
    posting_offsets,
    postings,
    idf,
    factors,
    method,
    k1,
    delta,
    out_ids,
    out_scores,
    acc,
    flags,
    touched,
):
    """Exhaustive BM25 top-k of queries ``0 .. out_ids.shape[0] - 1``.

    Parameters
    ----------
    q_terms, q_weights, q_offsets : numpy.ndarray
        int32, float32, int64: the queries as CSR; ``q_offsets`` has ``n_queries + 1`` entries.
    posting_offsets, postings : numpy.ndarray
        int64 ``(n_terms + 1,)`` and uint8: the index's postings.
    idf : numpy.ndarray
        float64 ``(n_terms,)`` from ``term_idf``.
    factors : numpy.ndarray
        float32 ``(n_docs,)`` from ``doc_factors``.
    method : int
        A code of ``METHODS``.
    k1, delta : float
        BM25 parameters (``delta`` is used by bm25l and bm25+ only).
    out_ids, out_scores : numpy.ndarray
        int64 and float32 ``(n_queries, k)``, pre-filled with -1 and -inf; rows are written
        best first, ties by ascending position. Only documents holding at least one query
        term are hits.
    acc, flags, touched : numpy.ndarray
        Scratch: float64 and uint8 ``(n_docs,)``, all zero on entry (and left so), and int32
        ``(n_docs + 1,)``.
    """
    n_queries, k = out_ids.shape
    for q in range(n_queries):
        n_touched = 0
        for j in range(q_offsets[q], q_offsets[q + 1]):
            term = q_terms[j]
            weight = q_weights[j] * idf[term]
            pos = posting_offsets[term]
            end = posting_offsets[term + 1]
            doc = np.int64(0)
            while pos < end:
                gap, pos = _read_varint(postings, pos)
                tf, pos = _read_varint(postings, pos)
                doc += gap
                acc[doc] += weight * _term_score(np.float64(tf), factors[doc], method, k1, delta)
                # Branch-free "first time seen": append, and advance only if new.
                touched[n_touched] = doc
                n_touched += 1 - flags[doc]
                flags[doc] = 1
        select_top_k(acc, touched, n_touched, k, out_ids[q], out_scores[q])
        for i in range(n_touched):
            acc[touched[i]] = 0.0
            flags[touched[i]] = 0


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
