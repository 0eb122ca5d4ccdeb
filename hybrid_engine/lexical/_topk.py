"""numba kernels for exact top-k selection over accumulated scores.

Hits are ranked by descending score rounded to float32 (the score callers get back), then
ascending position (document id): a row's order is exactly the order of its returned scores,
ties by position. All kernels are ``nogil``.

The selecting kernels take ``allowed``: None, or a bool ``(n_docs,)`` mask of the documents
that may be selected; a document it excludes is skipped as a candidate, so it never takes a
place in the top k. numba compiles the None case apart, its mask checks removed.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, inline="always")
def _better(score_a, doc_a, score_b, doc_b):
    """Whether hit a ranks before hit b: higher score, then lower position."""
    return score_a > score_b or (score_a == score_b and doc_a < doc_b)


SMALL_K = 32
"""Up to this k, top-k keeps a sorted buffer (one predictable compare per hit); above it a
radix sort ranks the hits."""


@numba.njit(cache=True, nogil=True, inline="always")
def _insert(buf_scores, buf_docs, size, k, score, doc):
    """Insert a hit into the sorted buffer (best first) of ``size`` hits, capped at ``k``."""
    i = min(size, k - 1)
    while i > 0 and _better(score, doc, buf_scores[i - 1], buf_docs[i - 1]):
        buf_scores[i] = buf_scores[i - 1]
        buf_docs[i] = buf_docs[i - 1]
        i -= 1
    buf_scores[i] = score
    buf_docs[i] = doc
    return min(size + 1, k)


_BELOW_F32 = 1.0 - 2.0**-22
_MIN_NORMAL_F32 = np.float32(2.0**-126)
"""A float64 below ``t * _BELOW_F32`` never rounds to a float32 of ``t`` or more, for any
normal float32 ``t > 0`` (its spacing is at most ``t * 2**-23``)."""


@numba.njit(cache=True, nogil=True)
def _top_k_small(acc, hits, n_hits, k, out_ids, out_scores, allowed):
    """Top-k of listed hits for small k: a sorted buffer that most hits never enter.

    Once the buffer is full, a float64 compare against a bound just under the k-th float32
    score rejects almost every hit before any rounding (and before the mask is read).
    """
    buf_scores = np.empty(k, dtype=np.float32)
    buf_docs = np.empty(k, dtype=np.int64)
    size = 0
    bound = -1.0
    for i in range(n_hits):
        doc = hits[i]
        if acc[doc] < bound:
            continue
        if allowed is not None:
            if not allowed[doc]:
                continue
        score = np.float32(acc[doc])
        if size < k or _better(score, doc, buf_scores[k - 1], buf_docs[k - 1]):
            size = _insert(buf_scores, buf_docs, size, k, score, doc)
            if size == k and buf_scores[k - 1] >= _MIN_NORMAL_F32:
                bound = np.float64(buf_scores[k - 1]) * _BELOW_F32
    for r in range(size):
        out_ids[r] = buf_docs[r]
        out_scores[r] = buf_scores[r]


@numba.njit(cache=True, nogil=True)
def scan_small(acc, n, base, k, buf_scores, buf_docs, size, allowed):
    """Offer the positive entries of ``acc[:n]`` (document ``base + i`` at ``acc[i]``) of
    allowed documents to a sorted top-k buffer (k <= SMALL_K); returns the new buffer size.

    Call on ascending, disjoint document ranges with the same buffer. Scanning in ascending
    position, a later equal score never ranks higher, so a hit enters a full buffer only with a
    float32 score above the k-th; ``float32(a) > t`` implies ``a > t``, so one float64 compare
    per position rejects the rest.
    """
    bound = np.float64(buf_scores[k - 1]) if size == k else 0.0
    for i in range(n):
        if acc[i] > bound:
            if allowed is not None:
                if not allowed[base + i]:
                    continue
            score = np.float32(acc[i])
            if size < k or score > buf_scores[k - 1]:
                size = _insert(buf_scores, buf_docs, size, k, score, base + i)
                if size == k:
                    bound = np.float64(buf_scores[k - 1])
    return size


_BLOCK = 16
"""Entries ``collect_range`` tests at once: a block with none above the bound is passed over."""


@numba.njit(cache=True, nogil=True, inline="always")
def _append_above(acc, start, stop, base, bound, hit_docs, hit_scores, count, allowed):
    """``collect_range`` over ``acc[start:stop]``, branch-free."""
    if allowed is None:
        for i in range(start, stop):
            hit_docs[count] = base + i
            hit_scores[count] = acc[i]
            count += acc[i] > bound
    else:
        for i in range(start, stop):
            hit_docs[count] = base + i
            hit_scores[count] = acc[i]
            count += (acc[i] > bound) & allowed[base + i]
    return count


@numba.njit(cache=True, nogil=True)
def collect_range(acc, n, base, bound, hit_docs, hit_scores, count, allowed):
    """Append the entries of ``acc[:n]`` above ``bound`` (>= 0) of allowed documents as
    (document ``base + i``, float32 score) after the first ``count`` of
    ``hit_docs``/``hit_scores``; returns the new count. Block by block: one vectorized test
    of a block's entries against ``bound`` (once it rises, most blocks hold none), then
    branch-free appends in the blocks that do; both arrays need one spare entry."""
    full = n - n % _BLOCK
    for start in range(0, full, _BLOCK):
        above = False
        for i in range(start, start + _BLOCK):  # a constant trip count: vectorized
            above |= acc[i] > bound
        if above:
            count = _append_above(
                acc, start, start + _BLOCK, base, bound, hit_docs, hit_scores, count, allowed
            )
    return _append_above(acc, full, n, base, bound, hit_docs, hit_scores, count, allowed)


_RADIX_BITS = 11
_RADIX_PASSES = 6  # 6 * 11 >= 64


@numba.njit(cache=True, nogil=True)
def top_k_radix(scores, docs, n_hits, k, out_ids, out_scores):
    """Top-k by radix sort of hits given as float32 ``scores`` aligned with ``docs``.

    Branch-free, best when k is large. Each hit gets the 64-bit key
    ``(~float32_bits(score) << 32) | doc``; scores are >= 0, so ascending keys rank by
    descending float32 score, then ascending position. A histogram of the top key bits first
    drops the hits that cannot reach the top k.
    """
    if n_hits == 0:
        return
    k = min(k, n_hits)
    bits = scores[:n_hits].view(np.uint32)
    keys = np.empty(n_hits, dtype=np.uint64)
    for i in range(n_hits):
        keys[i] = (np.uint64(0xFFFFFFFF - bits[i]) << np.uint64(32)) | np.uint64(docs[i])
    # Keep the hits whose top digit is at most the digit of the k-th best.
    top_shift = np.uint64(64 - _RADIX_BITS)
    hist = np.zeros(1 << _RADIX_BITS, dtype=np.int64)
    for i in range(n_hits):
        hist[keys[i] >> top_shift] += 1
    cutoff = 0
    seen = hist[0]
    while seen < k:
        cutoff += 1
        seen += hist[cutoff]
    m = 0
    for i in range(n_hits):
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
    top_bits = np.empty(k, dtype=np.uint32)
    for r in range(k):
        out_ids[r] = np.int64(keys[r] & np.uint64(0xFFFFFFFF))
        top_bits[r] = np.uint32(0xFFFFFFFF - (keys[r] >> np.uint64(32)))
    out_scores[:k] = top_bits.view(np.float32)


@numba.njit(cache=True, nogil=True)
def select_top_k(acc, hits, n_hits, k, out_ids, out_scores, allowed):
    """Write the exact top-k allowed hits (or all, when fewer) into one output row, best
    first.

    Parameters
    ----------
    acc : numpy.ndarray
        float64 ``(n_docs,)``: scores, valid at the hit positions; all must be > 0.
    hits : numpy.ndarray
        int32: the hit positions are ``hits[:n_hits]``, each once, in any order (left as
        they are, so callers can reset ``acc`` at every hit).
    out_ids, out_scores : numpy.ndarray
        int64 and float32 ``(k,)``; entries past the number of hits are left as they are.
    allowed : numpy.ndarray or None
        bool ``(n_docs,)``: the hits that may be selected; None: all.
    """
    if n_hits == 0:
        return
    if k <= SMALL_K:
        _top_k_small(acc, hits, n_hits, k, out_ids, out_scores, allowed)
        return
    scores = np.empty(n_hits, dtype=np.float32)
    if allowed is None:
        for i in range(n_hits):
            scores[i] = acc[hits[i]]
        top_k_radix(scores, hits, n_hits, k, out_ids, out_scores)
        return
    docs = np.empty(n_hits, dtype=np.int32)  # the allowed hits, appended branch-free
    kept = 0
    for i in range(n_hits):  # kept <= i: every write is in bounds
        doc = hits[i]
        docs[kept] = doc
        scores[kept] = acc[doc]
        kept += allowed[doc]
    top_k_radix(scores, docs, kept, k, out_ids, out_scores)
