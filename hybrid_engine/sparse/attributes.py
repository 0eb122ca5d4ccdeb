"""What a ``SpladeIndex`` holds and reads back: its quantized postings, their scale, the
documents' ids and the query encoder; the postings as document vectors again."""

from __future__ import annotations

import numpy as np

from hybrid_engine import _core
from hybrid_engine.corpus import DocIds, IndexedDocuments
from hybrid_engine.lexical.postings import PostingsSearcher
from hybrid_engine.lexical.postings_check import PostingsCheck
from hybrid_engine.protocols import SparseEncoder
from hybrid_engine.result import SparseVectors

_NO_BYTES = np.zeros(0, np.uint8)
_NO_FACTORS = np.zeros(0, np.float32)


class SpladeAttributes(IndexedDocuments):
    """The state of a ``SpladeIndex`` and its read-only properties."""

    def __init__(
        self,
        arrays: dict[str, np.ndarray],
        scale: float,
        doc_ids: DocIds,
        encoder: SparseEncoder,
        model_hash: str,
        check: PostingsCheck | None = None,
    ) -> None:
        """Private: use ``build``, ``from_vectors`` or ``load``. ``arrays`` must already be
        validated, but for the posting lists that ``check`` (when given) checks on first
        use."""
        self._arrays = arrays
        self._check = check
        self._scale = float(scale)
        self._doc_ids = doc_ids
        self._encoder = encoder
        self._model_hash = model_hash
        offsets = arrays["posting_offsets"]
        self._doc_freqs = np.diff(offsets).astype(np.int32)
        # The BM25 kernels' impact layout: a term's weight is q_w * idf[t], here the scale.
        self._term_scale = np.full(len(self._doc_freqs), self._scale, np.float64)
        # The uint8 impacts in place (mapped too): the kernels promote each to float64 as they
        # multiply, exactly as they would a float32 copy of it.
        layout = (
            offsets,
            _NO_BYTES,
            _NO_FACTORS,
            offsets,
            arrays["doc_ids"],
            arrays["impacts"],
            True,
        )
        # (method, k1, delta) are unused by the impact layout.
        self._searcher = PostingsSearcher(
            self._term_scale, self._doc_freqs, layout, (0, 0.0, 0.0), len(doc_ids), check
        )

    # -- properties ---------------------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        """Number of vocabulary terms (the encoder's)."""
        return len(self._doc_freqs)

    @property
    def num_postings(self) -> int:
        return len(self._arrays["doc_ids"])

    @property
    def scale(self) -> float:
        """Weight of impact 1: a posting's weight is ``impact * scale``."""
        return self._scale

    @property
    def encoder(self) -> SparseEncoder:
        """The encoder of the queries."""
        return self._encoder

    @property
    def model_hash(self) -> str:
        """``model_hash`` of the encoder that built the index."""
        return self._model_hash

    def postings(self, term: int) -> tuple[np.ndarray, np.ndarray]:
        """Doc ids (int32, ascending) and uint8 impacts of one term id's postings.

        Raises
        ------
        IndexFormatError
            The term's postings are malformed (an index loaded without ``verify``).
        """
        start, end = self._arrays["posting_offsets"][term : term + 2]
        if self._check is not None:
            self._check.terms(np.array([term], np.int32))
        return self._arrays["doc_ids"][start:end], self._arrays["impacts"][start:end]

    def document_vectors(self, positions: np.ndarray | None = None) -> SparseVectors:
        """The indexed vectors of documents, from the postings: what ``from_vectors`` reads.

        Parameters
        ----------
        positions : numpy.ndarray, optional
            1-d integer array of document positions in ``[0, num_documents)``, the rows to
            return in that order; None: every document.

        Returns
        -------
        SparseVectors
            One row per position, terms ascending, weights float32 ``impact * scale`` (the
            quantized weights the scores use; a document whose weights all quantized to 0 has
            an empty row). ``from_vectors(document_vectors(), scale=scale)`` reproduces these
            impacts exactly.

        Raises
        ------
        TypeError
            ``positions`` is not a 1-d integer array.
        IndexError
            A position outside ``[0, num_documents)``.
        IndexFormatError
            A malformed posting list (an index loaded without ``verify``): every one is read.
        """
        n_docs = self.num_documents
        if self._check is not None:
            self._check.everything()
        # Term-major postings inverted again: each term's doc ids become a document's terms.
        rows = _core.invert_impacts(
            self._arrays["posting_offsets"],
            self._arrays["doc_ids"],
            self._arrays["impacts"],
            n_docs,
        )
        offsets, terms, impacts = rows["posting_offsets"], rows["doc_ids"], rows["impacts"]
        if positions is not None:
            positions = np.asarray(positions)
            if positions.ndim != 1 or positions.dtype.kind not in "iu":
                raise TypeError(
                    f"positions must be a 1-d integer array, got shape {positions.shape} and "
                    f"dtype {positions.dtype}"
                )
            outside = (positions < 0) | (positions >= n_docs)
            if outside.any():
                raise IndexError(
                    f"position {positions[outside][0]} out of range for {n_docs} documents"
                )
            starts, counts = offsets[positions], np.diff(offsets)[positions]
            offsets = np.zeros(len(positions) + 1, np.int64)
            np.cumsum(counts, out=offsets[1:])
            take = np.repeat(starts - offsets[:-1], counts) + np.arange(offsets[-1])
            terms, impacts = terms[take], impacts[take]
        weights = (impacts.astype(np.float64) * self._scale).astype(np.float32)
        return SparseVectors(offsets, terms, weights)

    def __len__(self) -> int:
        return self.num_documents

    def __repr__(self) -> str:
        return (
            f"SpladeIndex({self.num_documents} documents, {self.num_postings} postings, "
            f"scale={self.scale:.4g})"
        )
