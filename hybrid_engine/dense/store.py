"""The vectors of a dense index and their HNSW graph: exact or graph top-k, and growth."""

from __future__ import annotations

import dataclasses

import numpy as np

from hybrid_engine.checks import check_int
from hybrid_engine.dense import filtered as _filtered
from hybrid_engine.dense import hnsw as _hnsw
from hybrid_engine.dense import knn as _knn
from hybrid_engine.dense import vectors as _vectors
from hybrid_engine.dense.candidates import Candidates
from hybrid_engine.dense.links import LinkGraph
from hybrid_engine.dense.params import DenseParams
from hybrid_engine.dense.quantization import Codes
from hybrid_engine.dense.vector_file import VectorFile
from hybrid_engine.result import SearchResult


class VectorStore:
    """Prepared float32 vectors in the first ``count`` rows of a buffer (with room to grow),
    and an HNSW graph of them all once there are more than ``params.exact_threshold``: its
    links and the codes of ``params.quantization`` it walks on (``links.LinkGraph``). The
    vectors are held once: the graph walks on them when they are not quantized, and they
    rescore its candidates.

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
        graph: LinkGraph | None,
        file: VectorFile | None = None,
    ) -> None:
        """Over checked, prepared rows; ``graph`` holds them all, or is None. ``file``: the
        rows' file, read by position to rescore the graph's candidates (``buffer`` then maps
        it, read only by exact searches)."""
        self._buffer = buffer
        self._file = file
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
            graph = _graph_of(buffer[:count], params, num_threads)
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
    def graph(self) -> LinkGraph | None:
        return self._graph

    @property
    def ef_search(self) -> int:
        return self._ef_search

    @ef_search.setter
    def ef_search(self, value: int) -> None:
        self._ef_search = check_int("ef_search", value, 1)
        if self._graph is not None:
            self._graph.set_ef(self._ef_search)

    @property
    def oversample(self) -> float:
        oversample = self._params.oversample
        assert oversample is not None  # DenseParams sets the default
        return oversample

    @oversample.setter
    def oversample(self, value: float) -> None:
        self._params = dataclasses.replace(self._params, oversample=value)

    def search(
        self,
        matrix: np.ndarray,
        k: int,
        exact: bool,
        threads: int,
        allowed: np.ndarray | None = None,
    ) -> SearchResult:
        """The top ``k`` of prepared query rows: the graph's candidates (``walk``) rescored
        with the float32 vectors, or exactly when ``exact`` or ``walk`` says so.

        ``allowed`` (checked bool, ``(count,)``): only those vectors may be returned, each row
        holding ``min(k, allowed.sum())`` hits (``filtered``)."""
        walked = None if exact else self.walk(matrix, k, threads, allowed)
        if walked is None:
            return self.exact(matrix, k, allowed)
        self.prefetch(walked)
        return self.rescore(matrix, walked, k, allowed)

    def walk(
        self, matrix: np.ndarray, k: int, threads: int, allowed: np.ndarray | None = None
    ) -> Candidates | None:
        """The graph's candidates for the top ``k`` of prepared query rows: its best
        ``params.candidates`` by their codes; under an ``allowed`` mask that leaves some out,
        the allowed ones of a list sized by ``filtered.plan``. None where the search is to be
        exact: no graph, ``k`` covers every vector, exact over the allowed rows is cheaper, or
        the walk reached too few vectors."""
        graph, n = self._graph, self._count
        if graph is None or len(matrix) == 0:
            return None
        if allowed is not None and (n_allowed := int(np.count_nonzero(allowed))) < n:
            if n_allowed == 0:
                return None
            size = _filtered.plan(k, n_allowed, n, self._ef_search, self._params.m)
            if size is None:
                return None
            size = self._params.candidates(size, n, self._ef_search)
            walked = Candidates.walked(graph, matrix, size, threads)
            return None if walked is None else walked.only(allowed[walked.ids], k)
        if k >= n:
            return None
        size = self._params.candidates(k, n, self._ef_search)
        return Candidates.walked(graph, matrix, size, threads)

    def prefetch(self, candidates: Candidates) -> None:
        """Ask the disk for the vectors ``rescore`` will read for ``candidates`` (when they
        are read from the file), so that reads of several stores go on at once."""
        if self._file is not None:
            self._file.advise(np.unique(candidates.ids[candidates.ids >= 0]))

    def rescore(
        self,
        matrix: np.ndarray,
        candidates: Candidates,
        k: int,
        allowed: np.ndarray | None = None,
    ) -> SearchResult:
        """The top ``k`` of each query's ``candidates`` by exact score, their vectors read
        from the file when there is one (asked for first by ``prefetch``); the candidates'
        exact rows searched exactly (under ``allowed``)."""
        out = SearchResult.empty(len(matrix), k)
        if self._file is not None:
            _knn.top_k_taken(self._file.take, matrix, candidates.ids, out.ids, out.scores)
        else:
            _knn.top_k(self.vectors, matrix, candidates.ids, out.ids, out.scores)
        rows = candidates.exact_rows
        if rows.any():
            rest = self.exact(matrix[rows], k, allowed)
            out.ids[rows], out.scores[rows] = rest.ids, rest.scores
        return self._checked(out)

    def exact(self, matrix: np.ndarray, k: int, allowed: np.ndarray | None = None) -> SearchResult:
        """The top ``k`` of prepared query rows by exact score over every vector, or over
        the ``allowed`` ones only."""
        out = SearchResult.empty(len(matrix), k)
        rows = None
        if allowed is not None and not allowed.all():
            rows = np.flatnonzero(allowed)
        if len(matrix) == 0 or (rows is not None and len(rows) == 0):
            return out
        norm = self._vector_norm_bound()
        _knn.exact_search(self.vectors, matrix, out.ids, out.scores, norm, rows)
        return self._checked(out)

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

        A graph is grown in hnswlib: its links and the vectors go back into an hnswlib index
        (``LinkGraph.to_hnswlib``: checked in full), the rows are inserted, and the links come
        out again, the new rows' codes made with the graph's own mapping (a pass over every
        vector and link: add in batches). On an error the rows are not added; a graph that was
        being extended is dropped (it could return positions past the vectors), so searches
        are exact until an ``append`` builds one again.
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
        m, ef_construction = params.m, params.ef_construction
        # A malformed graph raises here, nothing changed.
        grown = graph.to_hnswlib(buffer[:start], m, ef_construction) if graph else None
        try:
            if grown is not None and graph is not None:
                _hnsw.extend(grown, matrix, num_threads)
                codes = graph.codes.extended(matrix, buffer[:stop])
                graph = LinkGraph.from_hnswlib(grown, codes, m, ef_construction)
                del grown
            elif stop > params.exact_threshold:
                graph = _graph_of(buffer[:stop], params, num_threads)
            if graph is not None:
                graph.set_ef(self._ef_search)
        except BaseException:
            self._graph = None
            raise
        if self._max_norm is not None:
            self._max_norm = max(self._max_norm, _vectors.max_norm(matrix))
        self._buffer, self._count, self._graph, self._file = buffer, stop, graph, None


def _graph_of(vectors: np.ndarray, params: DenseParams, num_threads: int) -> LinkGraph:
    """The links of an hnswlib graph built over ``vectors``, with their codes of
    ``params.quantization``."""
    built = _hnsw.build(vectors, params.m, params.ef_construction, num_threads)
    codes = Codes.fit(params.quantization, vectors)
    return LinkGraph.from_hnswlib(built, codes, params.m, params.ef_construction)
