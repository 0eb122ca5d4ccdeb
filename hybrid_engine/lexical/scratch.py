"""Scratch buffers of the posting-list kernels, lent per call from a bounded free list."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from hybrid_engine._threads import default_threads

Scratch = tuple[np.ndarray, np.ndarray, np.ndarray]
"""``(acc, hits, hit_scores)``: float64 ``(n_docs,)`` all zero, int32 and float32
``(n_docs + 1,)``; 16 bytes per document (``kernels.search_batch``)."""


class ScratchPool:
    """Lends scratch sets for ``n_docs`` documents, keeping at most ``max_kept`` for reuse.

    Allocating a set per call costs page faults on first touch, so returned sets are kept; the
    bound caps the memory retained whatever the number of threads that ever searched (a
    thread-local set per thread would keep 16 bytes per document for every thread, forever).
    A call that finds no free set allocates one; a set returned to a full list is dropped.

    Parameters
    ----------
    n_docs : int
        Documents of the index the kernels search.
    max_kept : int, optional
        Sets kept for reuse; ``default_threads()`` when None.

    Notes
    -----
    Thread-safe: a lock guards the free list only, never a kernel call.
    """

    def __init__(self, n_docs: int, max_kept: int | None = None) -> None:
        self._n_docs = n_docs
        self._max_kept = default_threads() if max_kept is None else max_kept
        self._free: list[Scratch] = []
        self._lock = threading.Lock()

    @contextmanager
    def borrowed(self) -> Iterator[Scratch]:
        """A scratch set for the duration of the ``with`` block.

        The set goes back to the free list only when the block ends without an error: a kernel
        interrupted mid-query may leave ``acc`` non-zero, and such a set must not be reused.
        """
        with self._lock:
            scratch = self._free.pop() if self._free else None
        if scratch is None:
            n = self._n_docs
            scratch = (
                np.zeros(n, dtype=np.float64),
                np.empty(n + 1, dtype=np.int32),
                np.empty(n + 1, dtype=np.float32),
            )
        yield scratch
        with self._lock:
            if len(self._free) < self._max_kept:
                self._free.append(scratch)
