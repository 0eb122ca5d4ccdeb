"""An HNSW graph kept as its links only, searched over the codes of its vectors.

hnswlib builds the graph (``hnsw.build``) and keeps a copy of every vector inside it; this
module takes its links out, renumbered by position (``_link_kernels.from_hnsw_body``), and
drops hnswlib's index, so the float32 vectors are held once, by the ``VectorStore``. The search
is hnswlib's (``_link_kernels.search_links``) over ``quantization.Codes``: the float32 vectors
themselves, int8 or binary codes. Growing the graph goes through hnswlib again
(``to_hnswlib``), then back.

Links read from a file are checked before use: in full by ``check`` (``verify``), or at each
read by the search itself, which raises ``IndexFormatError`` for a malformed node.
"""

from __future__ import annotations

import math
import struct
import tempfile
import threading
from pathlib import Path

import hnswlib
import numpy as np

from hybrid_engine._threads import run_split
from hybrid_engine.dense import _hnsw_kernels
from hybrid_engine.dense import _link_kernels as kernels
from hybrid_engine.dense import hnsw as _hnsw
from hybrid_engine.dense.quantization import Codes
from hybrid_engine.errors import IndexFormatError

_TAG_LIMIT = (1 << 31) - 1
"""Visited marks are reset when the next tag would pass this."""
ARRAY_NAMES = ("links0", "upper", "upper_start")
"""The arrays of a graph in an index directory."""


class LinkGraph:
    """The links of an HNSW graph over ``n`` nodes (positions) and the codes it walks on.

    Quacks like the parts of ``hnswlib.Index`` a ``VectorStore`` uses: ``knn_query``,
    ``set_ef``, ``ef``, ``element_count``.

    Notes
    -----
    Thread-safe searches: each thread keeps its own visited marks.
    """

    def __init__(
        self,
        links0: np.ndarray,
        upper: np.ndarray,
        upper_start: np.ndarray,
        max_level: int,
        entry_point: int,
        codes: Codes,
        *,
        shown_as: Path | None = None,
    ) -> None:
        """Over the arrays of ``_link_kernels`` (their shapes and ``upper_start`` checked
        here, the links at use or by ``check``).

        Raises
        ------
        IndexFormatError
            Arrays that do not form a graph of ``len(links0)`` nodes, or whose entry point is
            not at ``max_level`` (naming ``shown_as``).
        """
        self._shown_as = shown_as
        n = len(links0)
        levels = np.diff(upper_start) if len(upper_start) == n + 1 else None
        if (
            links0.dtype != np.uint32
            or upper.dtype != np.uint32
            or upper_start.dtype != np.int64
            or links0.ndim != 2
            or upper.ndim != 2
            or links0.shape[1] < 2
            or upper.shape[1] < 2
            or levels is None
            or upper_start[0] != 0
            or upper_start[-1] != len(upper)
            or (levels < 0).any()
            or (levels > max_level).any()
            or not 0 <= entry_point < n
            or levels[entry_point] != max_level
            or len(codes.data) != n
        ):
            raise self._error("its arrays do not form a graph of its documents")
        self._links0, self._upper, self._upper_start = links0, upper, upper_start
        self._max_level, self._entry_point = max_level, entry_point
        self._codes = codes
        self._ef = 10
        self._local = threading.local()

    # -- from and to hnswlib --------------------------------------------------------------------

    @classmethod
    def from_hnswlib(
        cls, graph: hnswlib.Index, codes: Codes, m: int, ef_construction: int
    ) -> LinkGraph:
        """The links of an hnswlib graph labelled by position (``hnsw.build``); hnswlib's copy
        of the vectors is not kept."""
        with tempfile.TemporaryDirectory(prefix="hybrid-engine-graph-") as folder:
            file = Path(folder) / "graph.hnsw"
            graph.save_index(str(file))
            n, dim = graph.element_count, graph.dim
            return cls.from_file(
                _hnsw.read_header(file, n, dim, m, ef_construction), codes, trusted=True
            )

    @classmethod
    def from_file(
        cls, graph_file: _hnsw.GraphFile, codes: Codes, *, trusted: bool = False
    ) -> LinkGraph:
        """The links of an hnswlib graph file (format 1 of ``dense.format``), checked in full
        first unless ``trusted`` (hnswlib just wrote it).

        Raises
        ------
        IndexFormatError
            The file does not hold such a graph.
        """
        if not trusted:
            _hnsw.check_body(graph_file)
        g = graph_file
        words = g.body()
        starts, levels, _ = _hnsw_kernels.upper_starts(
            words, g.n, g.level0_words, g.max_m, g.max_level
        )
        links0, upper, upper_start, internal = kernels.from_hnsw_body(
            words, g.n, g.level0_words, g.label_word, g.max_m0, g.max_m, starts, levels
        )
        del words
        entry = int(np.flatnonzero(internal == g.entry_point)[0])
        return cls(links0, upper, upper_start, g.max_level, entry, codes)

    def to_hnswlib(self, vectors: np.ndarray, m: int, ef_construction: int) -> hnswlib.Index:
        """The graph in hnswlib, over ``vectors`` (float32 ``(n, dim)``), labelled by position,
        checked in full first (``hnsw.load``): to grow it.

        Raises
        ------
        IndexFormatError
            Malformed links.
        """
        n, dim = vectors.shape
        max_m0 = self._links0.shape[1] - 1
        record = np.zeros((n, max_m0 + 1 + dim + 2), dtype=np.uint32)
        record[:, : max_m0 + 1] = self._links0
        record[:, max_m0 + 1 : max_m0 + 1 + dim] = np.ascontiguousarray(vectors).view(np.uint32)
        record[:, -2] = np.arange(n, dtype=np.uint32)
        links_bytes, record_bytes = 4 * (max_m0 + 1), 4 * record.shape[1]
        header = struct.pack(
            "<6QiI3QdQ", 0, n, n, record_bytes, record_bytes - 8, links_bytes, self._max_level,
            self._entry_point, m, 2 * m, m, 1 / math.log(m), ef_construction,
        )  # fmt: skip
        upper = kernels.hnsw_upper_words(self._upper, self._upper_start)
        with tempfile.TemporaryDirectory(prefix="hybrid-engine-graph-") as folder:
            file = Path(folder) / "graph.hnsw"
            with open(file, "wb") as f:
                f.write(header)
                f.write(record.data)
                f.write(upper.data)
            del record, upper
            return _hnsw.load(_hnsw.read_header(file, n, dim, m, ef_construction))

    # -- what a store saves ---------------------------------------------------------------------

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        """The link arrays (``ARRAY_NAMES``)."""
        return {"links0": self._links0, "upper": self._upper, "upper_start": self._upper_start}

    @property
    def entry_point(self) -> int:
        return self._entry_point

    @property
    def max_level(self) -> int:
        return self._max_level

    @property
    def codes(self) -> Codes:
        return self._codes

    def check(self) -> None:
        """Check every link (a pass over them all).

        Raises
        ------
        IndexFormatError
            A node whose links a search could trip on.
        """
        bad = kernels.check_links(self._links0, self._upper, self._upper_start)
        if bad >= 0:
            raise self._error(f"the links of node {bad} are malformed")

    # -- search ---------------------------------------------------------------------------------

    @property
    def element_count(self) -> int:
        return len(self._links0)

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
        """The ``k`` nearest nodes of prepared float32 ``queries`` by their codes, split over
        ``num_threads``: int64 positions and float32 distances (``-similarity``) ``(n_queries,
        k)``, nearest first.

        Raises
        ------
        RuntimeError
            As hnswlib: a query reached fewer than ``k`` nodes.
        IndexFormatError
            The links are malformed where the search read them.
        """
        codes = self._codes
        floats = codes.query_floats(queries)
        planes, qpars = codes.query_planes(queries)
        labels = np.empty((len(queries), k), dtype=np.int64)
        distances = np.empty((len(queries), k), dtype=np.float32)
        faults: list[int] = []

        def work(lo: int, hi: int) -> None:
            bad = self._search(
                floats[lo:hi], planes[lo:hi], qpars[lo:hi], labels[lo:hi], distances[lo:hi]
            )
            if bad >= 0:
                faults.append(bad)

        run_split(len(queries), max(1, min(num_threads, len(queries))), work)
        if faults:
            raise self._error(f"the links of node {min(faults)} are malformed")
        if (labels < 0).any():
            raise RuntimeError("fewer than k elements were reached from the entry point")
        return labels, distances

    def _search(
        self,
        floats: np.ndarray,
        planes: np.ndarray,
        qpars: np.ndarray,
        labels: np.ndarray,
        distances: np.ndarray,
    ) -> int:
        """``search_links`` of some queries with this thread's visited marks."""
        local, codes = self._local, self._codes
        visited = getattr(local, "visited", None)
        if visited is None or local.tag + len(floats) >= _TAG_LIMIT:
            visited = local.visited = np.zeros(len(self._links0), dtype=np.int32)
            local.tag = 1
        tag = local.tag
        local.tag += len(floats)
        none = _EMPTY_CODES
        return int(
            kernels.search_links(
                self._links0, self._upper, self._upper_start, self._max_level,
                self._entry_point, codes.number,
                codes.data if codes.kind is None else none.floats,
                codes.data if codes.kind == "int8" else none.bytes_,
                codes.data if codes.kind == "binary" else none.bits,
                codes.second if codes.kind == "binary" else none.factors,
                floats, planes, qpars, max(self._ef, labels.shape[1]), visited, tag, labels,
                distances,
            )
        )  # fmt: skip

    def _error(self, what: str) -> IndexFormatError:
        where = f"{self._shown_as}: " if self._shown_as else ""
        return IndexFormatError(f"{where}{what}; the index is corrupt, rebuild it")


class _Empty:
    """Placeholders for the code arrays a kind does not use (typed as the kernel expects)."""

    floats = np.empty((0, 1), dtype=np.float32)
    bytes_ = np.empty((0, 1), dtype=np.int8)
    bits = np.empty((0, 1), dtype=np.uint64)
    factors = np.empty(0, dtype=np.float32)


_EMPTY_CODES = _Empty()
