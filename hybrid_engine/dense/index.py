"""Dense retrieval: vectors searched exactly (numpy) when few, through an HNSW graph when many."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from hybrid_engine.checks import (
    check_allowed,
    check_int,
    check_k,
    check_threads,
    is_text_batch,
)
from hybrid_engine.corpus import DocIds, Document
from hybrid_engine.dense import vectors as _vectors
from hybrid_engine.dense.candidates import Candidates
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.dense.encoding import (
    check_encoder,
    check_loaded_encoder,
    encode_corpus,
    encode_queries,
)
from hybrid_engine.dense.format import read_dense, write_dense
from hybrid_engine.dense.growth import DenseGrowth
from hybrid_engine.dense.params import DEFAULT_EXACT_THRESHOLD, DenseParams, checked_ef_search
from hybrid_engine.dense.store import VectorStore
from hybrid_engine.protocols import TextEncoder
from hybrid_engine.result import SearchResult, hits_width
from hybrid_engine.storage import check_mmap, verify_default


class DenseIndex(DenseGrowth):
    """Nearest-neighbour search over document vectors by cosine similarity or inner product.

    Build one with ``DenseIndex.build`` (texts and an encoder), ``DenseIndex.from_vectors``, or
    read one with ``DenseIndex.load``; grow it with ``add``.

    Up to ``exact_threshold`` vectors, every search is exact (a numpy matrix product). Above it,
    an HNSW graph (built by hnswlib, ``M=m``, ``ef_construction``) finds candidates, searched
    with ``ef_search`` over the vectors or their ``quantization`` codes; the best
    ``oversample * k`` of them are then scored exactly, so every returned score is the exact
    score of its id. ``search(..., exact=True)`` is exact at any size.

    Notes
    -----
    Thread-safety: ``search`` may run from many threads at once; hnswlib's graph search, the
    numba scoring kernels and numpy's matrix products release the GIL. ``num_threads`` splits
    one batch over hnswlib's threads. ``add``, setting ``ef_search`` and ``save`` must not run
    while another thread uses the same index.

    Memory: the float32 vectors are held once (4 bytes per dimension); the graph holds its
    links (about ``8 m + 12`` bytes per vector) and, quantized, the codes (int8: 1 byte per
    dimension, binary: 1 bit per dimension and 4 bytes). ``load(mmap=True)`` maps every file:
    a quantized index then reads the float32 vectors only for the candidates it rescores.
    """

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        corpus: Iterable[Document],
        *,
        encoder: TextEncoder,
        metric: str = "cosine",
        m: int = 16,
        ef_construction: int = 200,
        ef_search: int | None = None,
        exact_threshold: int = DEFAULT_EXACT_THRESHOLD,
        quantization: str | None = None,
        oversample: float | None = None,
        batch_size: int = 64,
        num_threads: int | None = None,
        show_progress: bool = False,
        embedding_cache: EmbeddingCache | None = None,
    ) -> DenseIndex:
        """Encode and index a corpus.

        Parameters
        ----------
        corpus : iterable of str or dict
            Documents: plain strings, or dicts with ``"text"`` and optional ``"title"`` (encoded
            as ``title + " " + text``) and ``"_id"``. Read once, in batches.
        encoder : TextEncoder
            Encodes the documents, and later the text queries; kept by the index and its
            ``model_hash`` recorded by ``save``.
        metric : {"cosine", "ip"}
            ``"cosine"`` scales every vector (and query) to unit length, so scores are cosine
            similarities; ``"ip"`` scores raw inner products.
        m, ef_construction : int
            HNSW graph degree (hnswlib's ``M``, 2 to 10,000) and build-time candidate list size.
        ef_search : int, optional
            HNSW search-time candidate list size; None: the quantization's
            ``DEFAULT_EF_SEARCH`` (256; binary codes 448). Settable later.
        exact_threshold : int
            Up to this many vectors no graph is built and searches are exact.
        quantization : {None, "int8", "binary"}
            What the graph walk scores (``dense.quantization``): the float32 vectors (None),
            int8 codes (1 byte per dimension) or binary codes (1 bit per dimension and 4
            bytes per vector). Quantized, the walk's best ``oversample * k`` candidates (no
            more than ``max(k, ef_search)``) are rescored with the float32 vectors, which
            then need not be resident (``load(mmap="cold")``): every returned score is exact.
        oversample : float, optional
            Candidates rescored per hit asked for, >= 1; None: the quantization's
            ``DEFAULT_OVERSAMPLE`` (1 for float32). Settable later.
        batch_size : int
            The encoder's batch size.
        num_threads : int, optional
            Threads inserting into the graph; all cores when None. With more than one, the
            graph depends on thread timing (results stay exactly scored).
        show_progress : bool
            Show a progress bar (tqdm) on stderr.
        embedding_cache : EmbeddingCache, optional
            Look each text up there first and encode only the ones missing (then cached), so
            an unchanged corpus is never encoded twice.

        Raises
        ------
        ValueError
            Empty corpus, bad parameters, duplicate or partly missing ``_id``s, an encoder
            output of the wrong shape, with non-finite values, or (cosine) an all-zero row.
        TypeError
            A document that is not ``str`` or a dict of ``str``; an encoder that is not a
            ``TextEncoder`` or returns something other than a float32 array.
        """
        params = DenseParams(metric, m, ef_construction, exact_threshold, quantization, oversample)
        ef_search = checked_ef_search(ef_search, params.quantization)
        batch_size = check_int("batch_size", batch_size, 1)
        threads = check_threads(num_threads)
        dim = check_encoder(encoder)
        buffer, ids = encode_corpus(
            encoder, corpus, dim, batch_size, metric, show_progress, embedding_cache
        )
        if not ids:
            raise ValueError("the corpus is empty; give at least one document")
        doc_ids = DocIds.from_list(ids)
        store = VectorStore.create(buffer, len(doc_ids), params, ef_search, threads)
        return cls(store, doc_ids, encoder, encoder.model_hash)

    @classmethod
    def from_vectors(
        cls,
        vectors: Any,
        *,
        ids: Sequence[str] | None = None,
        encoder: TextEncoder | None = None,
        metric: str = "cosine",
        m: int = 16,
        ef_construction: int = 200,
        ef_search: int | None = None,
        exact_threshold: int = DEFAULT_EXACT_THRESHOLD,
        quantization: str | None = None,
        oversample: float | None = None,
        num_threads: int | None = None,
    ) -> DenseIndex:
        """Index vectors computed elsewhere.

        Parameters
        ----------
        vectors : array-like
            Shape ``(n, dim)`` (or ``(dim,)`` for one), any real dtype; copied to float32.
        ids : sequence of str, optional
            One unique id per vector (``doc_ids``); positions when None.
        encoder : TextEncoder, optional
            The model that produced ``vectors``, to search with text queries and ``add`` texts;
            its ``model_hash`` is recorded by ``save``.
        metric, m, ef_construction, ef_search, exact_threshold, quantization, oversample
            As in ``build``.
        num_threads : int, optional
            As in ``build``.

        Raises
        ------
        ValueError
            No vectors, a dimension of 0, a non-finite value, (cosine) an all-zero row, ids of
            the wrong length or with duplicates, an encoder of another ``dim``, bad parameters.
        TypeError
            Non-numeric ``vectors``, ids that are not ``str``, an encoder that is not a
            ``TextEncoder``.
        """
        params = DenseParams(metric, m, ef_construction, exact_threshold, quantization, oversample)
        ef_search = checked_ef_search(ef_search, params.quantization)
        threads = check_threads(num_threads)
        matrix = _vectors.prepare(vectors, "vectors", metric)
        if len(matrix) == 0:
            raise ValueError(f"vectors have shape {matrix.shape}; give at least one vector")
        if encoder is not None and check_encoder(encoder) != matrix.shape[1]:
            raise ValueError(
                f"the encoder makes {encoder.dim}-dimensional vectors, these have "
                f"{matrix.shape[1]} dimensions; pass the encoder that produced them"
            )
        doc_ids = DocIds.from_list(_vectors.vector_ids(ids, len(matrix)))
        model_hash = encoder.model_hash if encoder is not None else None
        store = VectorStore.create(matrix, len(doc_ids), params, ef_search, threads)
        return cls(store, doc_ids, encoder, model_hash)

    # -- search -------------------------------------------------------------------------------

    def search(
        self,
        queries: str | Sequence[str] | Any,
        k: int = 10,
        *,
        exact: bool = False,
        num_threads: int | None = None,
        allowed: np.ndarray | None = None,
    ) -> SearchResult:
        """Top-k documents of each query by score (cosine similarity or inner product).

        Parameters
        ----------
        queries : str, sequence of str, 1-d numpy array of str, or array-like
            Query texts (encoded with the index's encoder; an empty or blank one is not
            encoded and gets an all-padding row), or query vectors of shape ``(dim,)`` or
            ``(n_queries, dim)``, any real dtype (scaled to unit length under cosine).
        k : int
            Hits per query, >= 1; a ``k`` above the number of documents ``n`` asks for all of
            them (the result has ``min(k, n)`` columns). Rows are padded (id -1, score -inf)
            past the number of allowed documents.
        exact : bool
            Score every (allowed) vector, the recall reference, even when the index has a
            graph.
        num_threads : int, optional
            hnswlib threads for a batch; all cores when None (one query runs on the caller's
            thread). The exact path scores batches of 16 queries or more with a BLAS matrix
            product, on the BLAS library's threads, and smaller ones on the caller's thread.
        allowed : numpy.ndarray, optional
            bool, shape ``(num_documents,)``: only documents whose entry is True may be
            returned (deleted or filtered-out ones are False). Applied before top-k: every row
            has ``min(k, allowed.sum())`` hits, the top of the allowed documents as if the
            index held them alone (through the graph, up to its approximation). Few allowed
            documents are scored exactly, the allowed rows only; more go through the graph,
            asked for enough candidates that ``k`` of them pass (``dense.filtered``), and a
            query left with fewer is scored exactly over the allowed rows.

        Returns
        -------
        SearchResult
            ``ids`` int64 positions and ``scores`` float32, shape ``(n_queries, min(k,
            num_documents))``; rows sorted by descending score, equal scores by ascending
            position. Scores are the same on both paths: the float32 products (exact in
            float64) summed in float64, which is exact but for that sum's rounding (it matters
            only when products near the float32 maximum cancel); through the graph, a true
            neighbour may be missed.

        Raises
        ------
        ValueError
            ``k < 1``; query vectors of another dimension, with NaN or inf, (cosine) all
            zeros, or (ip) so long that their scores could pass the float32 range; text
            queries on an index without an encoder; encoder output of the wrong shape;
            ``allowed`` of another shape.
        TypeError
            Queries that are neither texts nor a numeric array, a mix of both; encoder output
            that is not a float32 array; ``allowed`` that is not a numpy bool array.
        """
        k, allowed = self._checked_search(k, allowed)
        threads = check_threads(num_threads)
        if is_text_batch(queries):
            encoder = self._require_encoder("search text queries")
            matrix, rows, n_queries = encode_queries(encoder, queries, self.dim, self.metric)
            found = self._store.search(matrix, k, exact, threads, allowed)
            return found.scattered(rows, n_queries)
        if isinstance(queries, Sequence) and len(queries) == 0:
            return SearchResult.empty(0, k)
        return self._store.search(self._query_matrix(queries), k, exact, threads, allowed)

    def candidates(
        self,
        queries: Any,
        k: int = 10,
        *,
        num_threads: int | None = None,
        allowed: np.ndarray | None = None,
    ) -> Candidates | None:
        """The first half of a graph search (``search``): the walk's candidates for the top
        ``k`` of query vectors, with their approximate scores, before rescoring; None when
        ``search`` would be exact (no graph, ``k`` covers the documents, few ``allowed``).
        ``candidates.search_pooled`` uses it to rescore several indexes' candidates from one
        pool. Arguments as ``search``, vectors only."""
        k, allowed = self._checked_search(k, allowed)
        threads = check_threads(num_threads)
        return self._store.walk(self._query_matrix(queries), k, threads, allowed)

    def prefetch(self, candidates: Candidates) -> None:
        """Ask the disk for the vectors that ``rescore`` of ``candidates`` will read, when
        they are read from their file (``load(mmap="cold")``); ``candidates.search_pooled``
        asks for those of every index before rescoring any."""
        self._store.prefetch(candidates)

    def rescore(
        self,
        queries: Any,
        candidates: Candidates,
        k: int = 10,
        *,
        allowed: np.ndarray | None = None,
    ) -> SearchResult:
        """The second half of a graph search: the top ``k`` of each query's ``candidates``
        (from ``candidates`` with the same queries and ``allowed``, or a part of them) by
        exact score, as ``search`` returns them; ``prefetch`` them first."""
        k, allowed = self._checked_search(k, allowed)
        return self._store.rescore(self._query_matrix(queries), candidates, k, allowed)

    def _checked_search(self, k: int, allowed: np.ndarray | None) -> tuple[int, np.ndarray | None]:
        """``k`` (checked, at most the documents) and ``allowed`` (checked) of a search."""
        k = hits_width(check_k(k), self.num_documents)
        if allowed is not None:
            allowed = check_allowed(allowed, self.num_documents)
        return k, allowed

    def _query_matrix(self, queries: Any) -> np.ndarray:
        """Query vectors prepared for the store (float32, unit rows under cosine)."""
        return _vectors.prepare(queries, "query vectors", self.metric, self.dim)

    # -- persistence --------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to directory ``path`` atomically (see ``storage.write_index_dir``).

        The directory holds ``vectors.npy``, the ids (when given), the graph's links and codes
        when there is one (``dense.format``), and a manifest with every parameter,
        ``ef_search`` included, and the encoder's ``model_hash``.
        """
        write_dense(
            path,
            self.vectors,
            self._doc_ids,
            self._store.params,
            self._store.ef_search,
            self._model_hash,
            self._store.graph,
        )

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        encoder: TextEncoder | None = None,
        mmap: bool | str = False,
        verify: bool | None = None,
    ) -> DenseIndex:
        """Read an index saved by ``save``.

        Parameters
        ----------
        path : path-like
            The index directory.
        encoder : TextEncoder, optional
            Needed for text queries and adds. Its ``model_hash`` must be the one the index
            recorded (when it recorded one) and its ``dim`` the index's.
        mmap : {False, True, "cold"}
            True: memory-map every array read-only instead of reading it: without ``verify``,
            the graph's links are checked as a search reads them, so the load reads only the
            table of where each node's upper levels start (8 bytes per vector) and the process
            holds only the pages searches touch. ``"cold"``: map only the float32 vectors of
            a quantized graph and read the rest, links and codes, into memory (checked in
            full); the candidates a search rescores are read from the vectors' file by
            position (``dense.vector_file``), so they never enter the process's memory map.
            An index of format 1 (``graph.hnsw``) is read in full, its links taken out:
            ``save`` it again to map it.
        verify : bool, optional
            Check every file's sha256 now (one pass over them), and every link of the graph.
            Without, with ``mmap``, a malformed link makes the search that meets it raise
            ``IndexFormatError``. None (the default): ``not mmap``. Without ``mmap`` the
            links are always checked in full.

        Raises
        ------
        IndexFormatError
            The directory is missing, truncated, corrupt, or not a dense index of this format.
        ValueError
            An encoder of another model or dimension than the index's.
        TypeError
            An encoder that is not a ``TextEncoder``.
        """
        mmap = check_mmap(mmap)
        verify = verify_default(verify, mmap)
        saved = read_dense(path, mmap=mmap, verify=verify)
        if encoder is not None:
            check_loaded_encoder(path, encoder, saved.vectors.shape[1], saved.model_hash)
        store = VectorStore(
            saved.vectors, len(saved.doc_ids), saved.params, saved.ef_search, saved.graph,
            saved.file,
        )  # fmt: skip
        return cls(store, saved.doc_ids, encoder, saved.model_hash)


def joined_exact(indexes: Sequence[DenseIndex]) -> DenseIndex:
    """One exact-only index over the vectors of ``indexes`` (same metric and dimension), in
    order, with positions as ids and no encoder: searching it equals searching each and
    merging by score, ties by position (the vectors are copied as they are, not prepared
    again)."""
    first = indexes[0]
    matrix = np.concatenate([index.vectors for index in indexes])
    params = DenseParams(first.metric, first.m, first.ef_construction, len(matrix))
    store = VectorStore(matrix, len(matrix), params, first.ef_search, None)
    return DenseIndex(store, DocIds(len(matrix)), None, None)
