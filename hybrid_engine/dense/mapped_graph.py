"""An hnswlib graph searched where it lies: its file memory-mapped, read by a numba search that
checks every link, count and label at use (``_hnsw_kernels.search_body``), so a load does no
pass over it and the process holds only the pages its searches touch.

Why not hnswlib: it has no memory-mapped mode and reads the whole file (a copy of every vector
among it) into memory, trusting it, so a load must first check all of it. The search here is
hnswlib's (``searchKnn``: greedy descent through the upper levels, then a beam of
``max(ef, k)`` at level 0, distance ``1 - <x, q>`` on the graph's own copy of the vectors), so
on the same graph it finds the same candidates but for float32 near-ties (its SIMD sums in
another order).
"""

from __future__ import annotations

import dataclasses
import tempfile
import threading
from pathlib import Path
from typing import TypeAlias

import hnswlib
import numpy as np

from hybrid_engine._threads import run_split
from hybrid_engine.dense import _hnsw_kernels as kernels
from hybrid_engine.dense import hnsw as _hnsw

_TAG_LIMIT = (1 << 31) - 1
"""Visited marks are reset when the next tag would pass this."""


class MappedGraph:
    """A graph file (``hnsw.read_header`` checked its header) searched in place.

    Quacks like the parts of ``hnswlib.Index`` a ``VectorStore`` uses: ``knn_query``,
    ``set_ef``, ``ef``, ``element_count`` and ``save_index``; ``loaded()`` gives the hnswlib graph
    (checked in full) when the index must grow.

    Notes
    -----
    The first search builds the table of where each element's upper-level links start: one
    word read per element (``_hnsw_kernels.upper_starts``), 8 bytes per element held. A
    malformed file makes that search raise ``IndexFormatError``, as does any search that meets
    a malformed record. Thread-safe: each thread keeps its own visited marks.
    """

    def __init__(self, graph_file: _hnsw.GraphFile) -> None:
        self._file = graph_file
        # The whole file, mapped while its path is valid (it may be open_index_dir's).
        self._raw = np.memmap(graph_file.file, dtype=np.uint8, mode="r")
        self._words = self._raw[_hnsw.HEADER_BYTES :].view(np.uint32)
        self._floats = self._words.view(np.float32)
        self._ef = 10
        self._starts: np.ndarray | None = None
        self._lock = threading.Lock()
        self._local = threading.local()

    @property
    def element_count(self) -> int:
        return self._file.n

    @property
    def ef(self) -> int:
        """The list size of searches (``set_ef``)."""
        return self._ef

    def set_ef(self, ef: int) -> None:
        """The list size of later searches (at least their ``k`` is used)."""
        self._ef = ef

    def knn_query(
        self, queries: np.ndarray, k: int = 1, num_threads: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        """hnswlib's ``knn_query`` of prepared float32 ``queries``, split over
        ``num_threads``: uint64 labels and float32 distances ``(n_queries, k)``.

        Raises
        ------
        RuntimeError
            As hnswlib: a query reached fewer than ``k`` nodes.
        IndexFormatError
            The file is malformed where the search read it.
        """
        starts = self._upper_starts()
        labels = np.empty((len(queries), k), dtype=np.int64)
        distances = np.empty((len(queries), k), dtype=np.float32)
        faults: list[int] = []

        def work(lo: int, hi: int) -> None:
            bad = self._search(starts, queries[lo:hi], k, labels[lo:hi], distances[lo:hi])
            if bad >= 0:
                faults.append(bad)

        run_split(len(queries), max(1, min(num_threads, len(queries))), work)
        if faults:
            bad = min(faults)
            raise self._file.element_error(
                bad, "links, levels or label", "its entry point, levels or labels are inconsistent"
            )
        if (labels < 0).any():
            raise RuntimeError("fewer than k elements were reached from the entry point")
        return labels.astype(np.uint64), distances

    def save_index(self, path: str) -> None:
        """Write the graph file's bytes to ``path``."""
        with open(path, "wb") as f:
            f.write(self._raw.data)

    def loaded(self) -> hnswlib.Index:
        """The graph read into hnswlib, checked in full first (``hnsw.load``).

        Raises
        ------
        IndexFormatError
            The file is malformed.
        """
        with tempfile.TemporaryDirectory(prefix="hybrid-engine-graph-") as folder:
            copy = Path(folder) / "graph.hnsw"
            self.save_index(str(copy))
            return _hnsw.load(dataclasses.replace(self._file, file=copy))

    def _upper_starts(self) -> np.ndarray:
        """The table of ``_hnsw_kernels.upper_starts``, built by the first search."""
        if self._starts is None:
            with self._lock:
                if self._starts is None:
                    g = self._file
                    starts, _, bad = kernels.upper_starts(
                        self._words, g.n, g.level0_words, g.max_m, g.max_level
                    )
                    if bad >= 0:
                        raise g.element_error(
                            bad, "upper-level links", "its size does not match its levels"
                        )
                    self._starts = starts
        return self._starts

    def _search(
        self,
        starts: np.ndarray,
        queries: np.ndarray,
        k: int,
        labels: np.ndarray,
        distances: np.ndarray,
    ) -> int:
        """``search_body`` of ``queries`` with this thread's visited marks."""
        g, local = self._file, self._local
        visited = getattr(local, "visited", None)
        if visited is None or local.tag + len(queries) >= _TAG_LIMIT:
            visited = local.visited = np.zeros(g.n, dtype=np.int32)
            local.tag = 1
        tag = local.tag
        local.tag += len(queries)
        return int(
            kernels.search_body(
                self._words, self._floats, g.n, g.level0_words, g.data_word, g.label_word,
                g.max_m0, g.max_m, g.max_level, g.entry_point, starts, queries,
                max(self._ef, k), visited, tag, labels, distances,
            )
        )  # fmt: skip


Graph: TypeAlias = "hnswlib.Index | MappedGraph"
"""The graph of a ``VectorStore``: built or loaded into hnswlib, or memory-mapped."""
