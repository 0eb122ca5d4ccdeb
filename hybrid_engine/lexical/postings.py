"""Searching posting lists with the numba kernels: pooled scratch, batch split over threads,
masks of allowed documents.

``BM25Index`` (compressed postings, BM25 weights) and ``SpladeIndex`` (uint8 impacts, one
scale) both score through ``PostingsSearcher``.
"""

from __future__ import annotations

import numpy as np

from hybrid_engine._threads import default_threads, run_split
from hybrid_engine.checks import check_allowed, check_threads
from hybrid_engine.lexical import _kernels as kernels
from hybrid_engine.lexical._postings_decode import allowed_doc_freqs
from hybrid_engine.lexical.postings_check import PostingsCheck
from hybrid_engine.lexical.scratch import ScratchPool
from hybrid_engine.result import SearchResult

QUERIES_PER_THREAD = 32
"""Below this many queries per thread, a batch is not worth another thread."""


class PostingsSearcher:
    """Exact top-k over an inverted index in the kernels' layout (``kernels.search_batch``).

    Parameters
    ----------
    term_weights : numpy.ndarray
        float64 ``(n_terms,)``: a term's weight multiplies the query's (BM25: idf).
    doc_freqs : numpy.ndarray
        int32 ``(n_terms,)``: postings per term.
    layout, scoring : tuple
        As in ``kernels.search_batch``.
    n_docs : int
        Documents in the index.
    check : PostingsCheck, optional
        Posting lists not checked yet: each search checks those it reads first. None: all
        are known to be well formed.

    Notes
    -----
    Thread-safe: each call borrows scratch buffers (16 bytes per document) from a
    ``ScratchPool`` that keeps at most ``default_threads()`` sets for reuse, and the kernels
    release the GIL.
    """

    def __init__(
        self,
        term_weights: np.ndarray,
        doc_freqs: np.ndarray,
        layout: tuple,
        scoring: tuple,
        n_docs: int,
        check: PostingsCheck | None = None,
    ) -> None:
        self._term_weights = term_weights
        self._doc_freqs = doc_freqs
        self._layout = layout
        self._scoring = scoring
        self._n_docs = n_docs
        self._scratch = ScratchPool(n_docs)
        self._check = check

    def search(
        self,
        queries: tuple[np.ndarray, np.ndarray, np.ndarray],
        k: int,
        num_threads: int | None,
        *,
        allowed: np.ndarray | None = None,
    ) -> SearchResult:
        """Top-``k`` of each query of ``queries`` = ``(terms int32, weights float32, offsets
        int64)`` as CSR, on ``num_threads`` threads (None: one per ``QUERIES_PER_THREAD``
        queries, up to all cores).

        ``allowed`` (None, or bool ``(n_docs,)``, checked by ``checks.check_allowed``) limits
        the hits to the documents it marks: a row is the unmasked ranking with the other
        documents removed, ids and scores alike. An all-False mask returns all-padding rows
        without scoring. A hit scored beyond the float32 range is a ValueError; a malformed
        posting list among those read, an ``IndexFormatError``.
        """
        terms, weights, offsets = queries
        if self._check is not None:
            self._check.terms(terms)
        n = len(offsets) - 1
        out = SearchResult.empty(n, k)
        if allowed is not None:
            allowed = check_allowed(allowed, self._n_docs)
            if not allowed.any():
                return out
        if n == 0:
            return out
        if num_threads is None:
            threads = min(default_threads(), max(1, n // QUERIES_PER_THREAD))
        else:
            threads = min(check_threads(num_threads), n)
        dense_from = kernels.dense_work(self._n_docs, k)

        def work(start: int, stop: int) -> None:
            with self._scratch.borrowed() as (acc, hits, hit_scores):
                kernels.search_batch(
                    terms,
                    weights,
                    offsets[start : stop + 1],
                    self._term_weights,
                    self._doc_freqs,
                    self._layout,
                    self._scoring,
                    allowed,
                    out.ids[start:stop],
                    out.scores[start:stop],
                    acc,
                    hits,
                    hit_scores,
                    dense_from,
                    kernels.WINDOW,
                )

        run_split(n, threads, work)
        overflow = np.isinf(out.scores) & (out.ids >= 0)
        if overflow.any():
            raise ValueError(
                f"query {int(np.flatnonzero(overflow.any(axis=1))[0])} scores documents beyond "
                "the float32 range (a query weight too large for the index's term weights): "
                "such hits would tie at inf and rank by position; scale the weights down"
            )
        return out

    def live_doc_freqs(self, allowed: np.ndarray) -> np.ndarray:
        """For each term, how many documents with ``allowed[d]`` hold it: int64
        ``(n_terms,)`` (``allowed`` checked by ``checks.check_allowed``)."""
        allowed = check_allowed(allowed, self._n_docs)
        if self._check is not None:
            self._check.everything()
        return allowed_doc_freqs(self._layout, allowed)
