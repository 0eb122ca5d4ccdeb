"""The vectors of a dense index and their HNSW graph: exact or graph top-k, and growth."""

from __future__ import annotations

import numpy as np

from hybrid_engine.checks import check_int
from hybrid_engine.dense import filtered as _filtered
from hybrid_engine.dense import hnsw as _hnsw
from hybrid_engine.dense import knn as _knn
from hybrid_engine.dense import vectors as _vectors
from hybrid_engine.dense.mapped_graph import Graph, MappedGraph
from hybrid_engine.dense.params import DenseParams
from hybrid_engine.results import SearchResult


class VectorStore:
    """Prepared float32 vectors in the first ``count`` rows of a buffer (with room to grow),
    and an HNSW graph of them all once there are more than ``params.exact_threshold``.

    Notes
    -----
    ``search`` is thread-safe; ``append`` and setting ``ef_search`` are not.
    """

    def __init__(
        self,
        buffer: np.ndarray,
        count: int,
        params: DenseParams,
        ef_search: int,
        graph: Graph | None,
    ) -> None:
        """Over checked, prepared rows; ``graph`` holds them all, or is None."""
        self._buffer = buffer
        self._count = count
        self._params = params
        self._ef_search = ef_search
        self._graph = graph
        self._max_norm: float | None = None
        if graph is not None:
            graph.set_ef(ef_search)

    @classmethod
    def create(
        cls,
        buffer: np.ndarray,
        count: int,
        params: DenseParams,
        ef_search: int,
        num_threads: int,
    ) -> VectorStore:
        """A new store, its graph built when ``count`` is above the threshold."""
        graph = None
        if count > params.exact_threshold:
            graph = _hnsw.build(buffer[:count], params.m, params.ef_construction, num_threads)
        return cls(buffer, count, params, ef_search, graph)

    @property
    def vectors(self) -> np.ndarray:
        """float32 ``(count, dim)``, read-only."""
        view = self._buffer[: self._count]
        view.flags.writeable = False
        return view

    @property
    def params(self) -> DenseParams:
        return self._params

    @property
    def graph(self) -> Graph | None:
        return self._graph

    @property
    def ef_search(self) -> int:
        return self._ef_search

    @ef_search.setter
    def ef_search(self, value: int) -> None:
        self._ef_search = check_int("ef_search", value, 1)
        if self._graph is not None:
            self._graph.set_ef(self._ef_search)

    def search(
        self,
        matrix: np.ndarray,
        k: int,
        exact: bool,
        threads: int,
        allowed: np.ndarray | None = None,
    ) -> SearchResult:
        """The top ``k`` of prepared query rows: through the graph (candidates rescored
        exactly) unless ``exact``, there is none, or ``k`` covers every vector.

        ``allowed`` (checked bool, ``(count,)``): only those vectors may be returned, each row
        holding ``min(k, allowed.sum())`` hits (``filtered``)."""
        out = SearchResult.empty(len(matrix), k)
        if len(matrix) == 0:
            return out
        vectors = self.vectors
        if allowed is not None:
            n_allowed = int(np.count_nonzero(allowed))
            if n_allowed < len(vectors):
                self._search_allowed(matrix, exact, threads, allowed, n_allowed, out)
                return self._checked(out)
        if self._graph is not None and not exact and k < len(vectors):
            try:
                labels, _ = self._graph.knn_query(matrix, k=k, num_threads=threads)
            except RuntimeError:
                # hnswlib reached fewer than k vectors from the entry point: search exactly.
                labels = None
            if labels is not None:
                _knn.top_k(vectors, matrix, labels.astype(np.int64), out.ids, out.scores)
                return self._checked(out)
        _knn.exact_search(vectors, matrix, out.ids, out.scores, self._vector_norm_bound())
        return self._checked(out)

    def _search_allowed(
        self,
        matrix: np.ndarray,
        exact: bool,
        threads: int,
        allowed: np.ndarray,
        n_allowed: int,
        out: SearchResult,
    ) -> None:
        """Write into ``out`` the top-k of each query among the ``n_allowed`` (fewer than all)
        allowed vectors: through the oversampled graph when ``filtered.plan`` says it pays,
        else (and for the queries it leaves short) exactly over the allowed rows."""
        if n_allowed == 0:
            return
        vectors, k = self.vectors, out.ids.shape[1]
        graph, short = self._graph, np.ones(len(matrix), dtype=bool)
        if graph is not None and not exact:
            size = _filtered.plan(k, n_allowed, len(vectors), self._ef_search, self._params.m)
            if size is not None:
                short = _filtered.graph_allowed(
                    graph, vectors, matrix, allowed, size, threads, out.ids, out.scores
                )
        if short.any():
            rest = SearchResult.empty(int(np.count_nonzero(short)), k)
            rows = np.flatnonzero(allowed)
            norm = self._vector_norm_bound()
            _knn.exact_search(vectors, matrix[short], rest.ids, rest.scores, norm, rows)
            out.ids[short], out.scores[short] = rest.ids, rest.scores

    def _checked(self, out: SearchResult) -> SearchResult:
        """``out``, unless a hit's score passed the float32 range (inner products of huge
        vectors): rounded to +-inf, such hits would tie and rank by position, not by score."""
        overflow = np.isinf(out.scores) & (out.ids >= 0)
        if overflow.any():
            row = int(np.flatnonzero(overflow.any(axis=1))[0])
            raise ValueError(
                f"query vector row {row} has inner products with the index's vectors beyond the "
                "float32 range of scores; scale the queries down"
            )
        return out

    def _vector_norm_bound(self) -> float:
        """An upper bound of the vectors' L2 norms (computed on first use)."""
        if self._max_norm is None:
            self._max_norm = _vectors.max_norm(self.vectors)
        return self._max_norm

    def append(self, matrix: np.ndarray, num_threads: int) -> None:
        """Add prepared rows; crossing the threshold builds the graph.

        A memory-mapped graph is first read into hnswlib (``MappedGraph.loaded``: checked in
        full, then held in memory). On an error the rows are not added; a graph that was being
        extended is dropped (it could return positions past the vectors), so searches are
        exact until an ``append`` builds one again.
        """
        start, stop = self._count, self._count + len(matrix)
        if start == stop:
            return
        buffer = self._buffer
        if not buffer.flags.writeable:  # memory-mapped and full: grown copies it
            buffer = buffer[:start]
        buffer = _vectors.grown(buffer, start, stop - start)
        buffer[start:stop] = matrix
        graph, params = self._graph, self._params
        if isinstance(graph, MappedGraph):
            graph = graph.loaded()  # a malformed file raises here, nothing changed
            graph.set_ef(self._ef_search)
        try:
            if graph is not None:
                _hnsw.extend(graph, matrix, num_threads)
            elif stop > params.exact_threshold:
                graph = _hnsw.build(buffer[:stop], params.m, params.ef_construction, num_threads)
                graph.set_ef(self._ef_search)
        except BaseException:
            self._graph = None
            raise
        if self._max_norm is not None:
            self._max_norm = max(self._max_norm, _vectors.max_norm(matrix))
        self._buffer, self._count, self._graph = buffer, stop, graph
