"""Searching posting lists with the numba kernels: per-thread scratch, batch split over threads.

``BM25Index`` (compressed postings, BM25 weights) and ``SpladeIndex`` (uint8 impacts, one
scale) both score through ``PostingsSearcher``.
"""

from __future__ import annotations

import threading

import numpy as np

from hybrid_engine._threads import default_threads, run_split
from hybrid_engine.checks import check_threads
from hybrid_engine.lexical import _kernels as kernels
from hybrid_engine.results import SearchResult

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

    Notes
    -----
    Thread-safe: each thread keeps its own scratch buffers (reused: allocating them per call
    costs page faults), and the kernels release the GIL.
    """

    def __init__(
        self,
        term_weights: np.ndarray,
        doc_freqs: np.ndarray,
        layout: tuple,
        scoring: tuple,
        n_docs: int,
    ) -> None:
        self._term_weights = term_weights
        self._doc_freqs = doc_freqs
        self._layout = layout
        self._scoring = scoring
        self._n_docs = n_docs
        self._scratch = threading.local()

    def _scratch_buffers(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        buffers = getattr(self._scratch, "buffers", None)
        if buffers is None:
            n = self._n_docs
            buffers = (
                np.zeros(n, dtype=np.float64),
                np.empty(n + 1, dtype=np.int32),
                np.empty(n + 1, dtype=np.float32),
            )
            self._scratch.buffers = buffers
        return buffers

    def search(
        self,
        queries: tuple[np.ndarray, np.ndarray, np.ndarray],
        k: int,
        num_threads: int | None,
    ) -> SearchResult:
        """Top-``k`` of each query of ``queries`` = ``(terms int32, weights float32, offsets
        int64)`` as CSR, on ``num_threads`` threads (None: one per ``QUERIES_PER_THREAD``
        queries, up to all cores)."""
        terms, weights, offsets = queries
        n = len(offsets) - 1
        out = SearchResult.empty(n, k)
        if n == 0:
            return out
        if num_threads is None:
            threads = min(default_threads(), max(1, n // QUERIES_PER_THREAD))
        else:
            threads = min(check_threads(num_threads), n)
        dense_from = kernels.dense_work(self._n_docs, k)

        def work(start: int, stop: int) -> None:
            acc, hits, hit_scores = self._scratch_buffers()
            kernels.search_batch(
                terms,
                weights,
                offsets[start : stop + 1],
                self._term_weights,
                self._doc_freqs,
                self._layout,
                self._scoring,
                out.ids[start:stop],
                out.scores[start:stop],
                acc,
                hits,
                hit_scores,
                dense_from,
                kernels.WINDOW,
            )

        run_split(n, threads, work)
        return out
