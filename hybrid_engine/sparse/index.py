"""Learned-sparse retrieval: SPLADE document vectors as quantized term impacts in a C++-built
inverted index, scored by the BM25 index's numba kernels.

Each document's SPLADE weights are quantized to uint8 impacts with one corpus-wide ``scale``
(``impact = rint(weight / scale)``, ``scale = max weight / 255`` unless given; an impact of 0
is no posting) and inverted by ``_core.invert_impacts``. A query is encoded at search time
(its weights kept float32) and scores ``sum over its terms of q_w * impact * scale``, exactly
(the float64 sum of the terms' contributions, rounded to float32).

There are no collection statistics: indexes quantized with the same ``scale`` give comparable
scores, so the segments of a live index can be searched apart and their top-k merged, and
``document_vectors`` -> ``from_vectors`` with that scale re-indexes them without the model.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

import numpy as np

from hybrid_engine import _core
from hybrid_engine.checks import check_allowed, check_k, check_queries, nonblank_rows
from hybrid_engine.corpus import ENCODE_CHUNK, DocIds, Document, iter_batches
from hybrid_engine.protocols import SparseEncoder
from hybrid_engine.result import SearchResult, SparseVectors, hits_width
from hybrid_engine.sparse.attributes import SpladeAttributes
from hybrid_engine.sparse.format import INDEX_ARRAYS, read_splade, write_splade
from hybrid_engine.sparse.vectors import check_scale, check_vectors, default_scale, quantize
from hybrid_engine.storage import verify_default


class SpladeIndex(SpladeAttributes):
    """An immutable learned-sparse (SPLADE) index over a fixed corpus.

    Build one with ``SpladeIndex.build`` (from texts), ``SpladeIndex.from_vectors`` (from
    document vectors already encoded) or read one with ``SpladeIndex.load``.

    Notes
    -----
    Thread-safe: ``search`` may run from many threads at once (ONNX Runtime and the numba
    scoring release the GIL).
    """

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        corpus: Iterable[Document],
        *,
        encoder: SparseEncoder | None = None,
        num_threads: int | None = None,
        show_progress: bool = False,
        scale: float | None = None,
    ) -> SpladeIndex:
        """Encode and index a corpus.

        Parameters
        ----------
        corpus : iterable of str or dict
            Documents as in ``BM25Index.build`` (``title + " " + text`` is encoded); read
            once, in batches. Every document needs some text.
        encoder : SparseEncoder, optional
            Encodes the documents, and later the queries; the default
            ``SpladeEncoder.load(num_threads=num_threads)`` when None. Kept by the index, its
            ``model_hash`` recorded by ``save``.
        num_threads : int, optional
            Threads of the default encoder; all cores when None.
        show_progress : bool
            Show a progress bar (tqdm) on stderr.
        scale : float, optional
            The weight of impact 1 (positive, finite): ``impact = rint(weight / scale)``, and
            weights above ``255 * scale`` saturate at impact 255. None: the largest weight
            over 255 (no weight saturates). Indexes of one scale give comparable scores (the
            segments of a live index); recorded by ``save``.

        Raises
        ------
        ValueError
            Empty corpus, a blank document, duplicate or partly missing ``_id``s, encoder
            output that is not a well-formed ``SparseVectors``, or a scale that is not
            positive and finite.
        TypeError
            A document that is not ``str`` or a dict of ``str``; a scale that is not a number.
        ModelNotFoundError
            ``encoder`` is None and the SPLADE model is not prepared.
        """
        scale = check_scale(scale)
        if encoder is None:
            from hybrid_engine.models.splade import SpladeEncoder

            encoder = SpladeEncoder.load(num_threads=num_threads)
        vocab_size = int(encoder.vocab_size)
        ids: list[str | None] = []
        counts: list[np.ndarray] = []
        terms: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        for texts, batch_ids in iter_batches(corpus, ENCODE_CHUNK):
            rows = encoder.encode(texts, show_progress=show_progress)
            rows = check_vectors(rows, len(texts), vocab_size)
            counts.append(np.diff(rows.offsets))
            terms.append(rows.terms)
            weights.append(rows.weights)
            ids.extend(batch_ids)
        if not ids:
            raise ValueError("the corpus is empty; give at least one document")
        doc_ids = DocIds.from_list(ids)
        offsets = np.zeros(len(ids) + 1, np.int64)
        np.cumsum(np.concatenate(counts), out=offsets[1:])
        vectors = SparseVectors(offsets, np.concatenate(terms), np.concatenate(weights))
        return cls._inverted(vectors, doc_ids, encoder, scale)

    @classmethod
    def from_vectors(
        cls,
        vectors: SparseVectors,
        *,
        encoder: SparseEncoder | None = None,
        ids: DocIds | Sequence[str] | None = None,
        scale: float | None = None,
    ) -> SpladeIndex:
        """Index document vectors already encoded (no model call), e.g. the merged
        ``document_vectors`` of several indexes.

        Parameters
        ----------
        vectors : SparseVectors
            One CSR row per document: int64 offsets, int32 term ids (ascending, each once per
            row, below ``encoder.vocab_size``), float32 weights (>= 0, finite).
        encoder : SparseEncoder, optional
            The encoder of the vectors' vocabulary, kept to encode queries and recorded by
            ``save``; the default ``SpladeEncoder.load()`` when None.
        ids : DocIds or sequence of str, optional
            The documents' ``_id``s, one per row, unique; None: ids are positions.
        scale : float, optional
            As in ``build``. Re-indexing ``document_vectors()`` with the index's ``scale``
            reproduces its impacts exactly.

        Raises
        ------
        ValueError
            No rows, malformed vectors, ids of another count or repeated, or a scale that is
            not positive and finite.
        TypeError
            Vectors that are not int64/int32/float32 CSR, ids that are not a sequence of str,
            or a scale that is not a number.
        ModelNotFoundError
            ``encoder`` is None and the SPLADE model is not prepared.
        """
        scale = check_scale(scale)
        if not isinstance(vectors, tuple) or len(vectors) != 3:
            raise TypeError(
                f"vectors must be SparseVectors(offsets, terms, weights), got "
                f"{type(vectors).__name__}"
            )
        n_docs = np.size(vectors[0]) - 1
        if n_docs < 1:
            raise ValueError("vectors hold no documents; give at least one row")
        if encoder is None:
            from hybrid_engine.models.splade import SpladeEncoder

            encoder = SpladeEncoder.load()
        vectors = check_vectors(vectors, n_docs, int(encoder.vocab_size), "from_vectors got")
        if ids is None:
            doc_ids = DocIds(n_docs)
        elif isinstance(ids, DocIds):
            doc_ids = ids
        elif isinstance(ids, Sequence) and not isinstance(ids, str):
            doc_ids = DocIds.from_list(list(ids))
        else:
            raise TypeError(f"ids must be a sequence of str or None, got {type(ids).__name__}")
        if len(doc_ids) != n_docs:
            raise ValueError(f"{len(doc_ids)} ids for {n_docs} vectors; give one id per row")
        return cls._inverted(vectors, doc_ids, encoder, scale)

    @classmethod
    def _inverted(
        cls,
        vectors: SparseVectors,
        doc_ids: DocIds,
        encoder: SparseEncoder,
        scale: float | None,
    ) -> SpladeIndex:
        """The index of checked document ``vectors``, quantized with ``scale`` (None: the
        default scale of their weights)."""
        if scale is None:
            scale = default_scale(vectors.weights)
        inverted = _core.invert_impacts(
            vectors.offsets,
            vectors.terms,
            quantize(vectors.weights, scale),
            int(encoder.vocab_size),
        )
        arrays = {name: inverted[name] for name in INDEX_ARRAYS}
        return cls(arrays, scale, doc_ids, encoder, encoder.model_hash)

    # -- search -------------------------------------------------------------------------------

    def search(
        self,
        queries: str | Sequence[str] | np.ndarray | SparseVectors,
        k: int = 10,
        *,
        num_threads: int | None = None,
        allowed: np.ndarray | None = None,
    ) -> SearchResult:
        """Exact top-k by the dot product of the query's SPLADE vector with the documents'.

        Parameters
        ----------
        queries : str, sequence of str, 1-d numpy array of str, or SparseVectors
            One query or a batch, encoded by ``encoder`` (an empty or blank query is not
            encoded and gets an all-padding row); or query vectors already encoded by it.
        k : int
            Hits per query, >= 1; a ``k`` above the number of documents ``n`` asks for all of
            them (the result has ``min(k, n)`` columns). Hits are the documents sharing a term
            with the query; rows are padded (id -1, score -inf) when fewer documents match.
        num_threads : int, optional
            Threads scoring the batch; when None, up to all cores for large batches (one per
            32 queries). The encoder's threads are its own.
        allowed : numpy.ndarray, optional
            bool ``(num_documents,)``, C-contiguous: only documents with ``allowed[d]`` are
            returned; a row equals the unmasked ranking with the other documents removed, ids
            and scores alike. All False: all-padding rows, without encoding the queries.

        Returns
        -------
        SearchResult
            ``ids`` int64 and ``scores`` float32, shape ``(n_queries, min(k,
            num_documents))``, rows best first,
            ties by ascending position.

        Raises
        ------
        ValueError
            ``k < 1``, malformed vectors (or weights so large that a score passes the
            float32 range), or ``allowed`` of the wrong shape or not C-contiguous.
        TypeError
            Queries that are not a str or a batch of str (``checks.check_queries``), or
            ``allowed`` that is not a numpy bool array.
        IndexFormatError
            A posting list the queries read is malformed (an index loaded without ``verify``).
        """
        k = hits_width(check_k(k), self.num_documents)
        if allowed is not None:
            allowed = check_allowed(allowed, self.num_documents)
        if isinstance(queries, SparseVectors):
            encoded = check_vectors(
                queries, len(queries.offsets) - 1, self.vocab_size, "the query vectors have"
            )
            return self._search_vectors(encoded, k, num_threads, allowed)
        texts = check_queries(queries)
        rows = nonblank_rows(texts)
        if len(rows) == 0 or (allowed is not None and not allowed.any()):
            return SearchResult.empty(len(texts), k)
        asked = [texts[row] for row in rows]
        encoded = check_vectors(self._encoder.encode(asked), len(asked), self.vocab_size)
        return self._search_vectors(encoded, k, num_threads, allowed).scattered(rows, len(texts))

    def _search_vectors(
        self,
        vectors: SparseVectors,
        k: int,
        num_threads: int | None,
        allowed: np.ndarray | None,
    ) -> SearchResult:
        return self._searcher.search(
            (vectors.terms, vectors.weights, vectors.offsets), k, num_threads, allowed=allowed
        )

    # -- persistence --------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to directory ``path`` atomically (see ``storage.write_index_dir``).

        The directory holds the postings (``posting_offsets``, ``doc_ids``, uint8
        ``impacts``), the ids (when given) and a manifest with the quantization scale, the
        counts and the encoder's ``model_hash``.
        """
        write_splade(
            path, self._arrays, self._scale, self._doc_ids, self.vocab_size, self._model_hash
        )

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        encoder: SparseEncoder | None = None,
        mmap: bool = False,
        verify: bool | None = None,
    ) -> SpladeIndex:
        """Read an index saved by ``save``.

        Parameters
        ----------
        path : path-like
            The index directory.
        encoder : SparseEncoder, optional
            The query encoder; the default ``SpladeEncoder.load()`` when None. Its
            ``model_hash`` must be the one the index recorded.
        mmap : bool
            Memory-map the postings read-only instead of reading them.
        verify : bool, optional
            Check every file's sha256 and every posting list now (one pass over the data).
            Without, a posting list is checked the first time a search (or ``postings``,
            ``document_vectors``) reads it, so a corrupt one never reaches the kernels either:
            that call raises ``IndexFormatError``. The arrays' dtypes and lengths and the
            offsets are checked either way. None (the default): ``not mmap``, so that a
            memory-mapped index opens without reading its postings (the ids are still read).

        Raises
        ------
        IndexFormatError
            The directory is missing, truncated, corrupt, or not a SPLADE index of this format.
        ValueError
            An encoder of another model or vocabulary than the index's.
        ModelNotFoundError
            ``encoder`` is None and the SPLADE model is not prepared.
        """
        verify = verify_default(verify, mmap)
        saved = read_splade(path, mmap=mmap, verify=verify)
        model_hash, vocab_size = saved.model_hash, saved.vocab_size
        if encoder is None:
            from hybrid_engine.models.splade import SpladeEncoder

            encoder = SpladeEncoder.load()
        if encoder.model_hash != model_hash or encoder.vocab_size != vocab_size:
            raise ValueError(
                f"the index at {path} was built by the model with hash {model_hash} "
                f"({vocab_size} terms), the encoder has {encoder.model_hash} "
                f"({encoder.vocab_size} terms): its query vectors would not match; load with the "
                "encoder that built the index, or rebuild the index with this one"
            )
        return cls(saved.arrays, saved.scale, saved.doc_ids, encoder, model_hash, saved.check)
