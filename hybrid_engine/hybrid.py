"""The hybrid engine: BM25, dense and learned-sparse (SPLADE) retrieval over one corpus,
fused, optionally diversified.

Saved as one directory (``storage.write_index_dir``)::

    manifest.json     format "hybrid_engine.hybrid", the retrievers, the document count
    bm25/             a BM25Index directory
    dense/            a DenseIndex directory
    splade/           a SpladeIndex directory
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid_engine.bm25 import BM25Index
from hybrid_engine.corpus import DocIds, Document, document_text
from hybrid_engine.dense import DenseIndex, TextEncoder
from hybrid_engine.embedding_cache import EmbeddingCache
from hybrid_engine.encoder import check_texts
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.fusion import DEFAULT_METHOD, fuse
from hybrid_engine.mmr import mmr as mmr_rerank
from hybrid_engine.results import SearchResult
from hybrid_engine.splade import SparseEncoder, SpladeIndex
from hybrid_engine.storage import read_index_dir, write_index_dir

FORMAT = "hybrid_engine.hybrid"
FORMAT_VERSION = 1
RETRIEVERS = ("bm25", "dense", "splade")
"""Retrievers a ``HybridIndex`` can combine, in the order of their legs (and fusion weights)."""
DEFAULT_RETRIEVERS = ("bm25", "dense")
"""The retrievers of ``HybridIndex.build`` by default."""
DEFAULT_DEPTH = 100
"""Hits each retriever hands to fusion."""


@dataclass(frozen=True)
class HybridResult(SearchResult):
    """A ``SearchResult`` plus the wall-clock milliseconds of each stage of the call.

    Attributes
    ----------
    timings : dict of str to float
        ``"bm25"``, ``"dense"`` and ``"splade"`` (query encoding included) for the legs used,
        ``"fusion"``, ``"mmr"`` (when used) and ``"total"``.
    """

    timings: dict[str, float] = field(default_factory=dict)


class HybridIndex:
    """BM25, dense and SPLADE retrieval (any of them) over the same documents, fused into one
    ranking.

    Build one with ``HybridIndex.build`` or read one with ``HybridIndex.load``.

    Notes
    -----
    Thread-safe for ``search`` (each stage is); not while ``save`` runs elsewhere.
    """

    def __init__(
        self, bm25: BM25Index | None, dense: DenseIndex | None, splade: SpladeIndex | None = None
    ) -> None:
        """Private: use ``build`` or ``load``."""
        self._bm25 = bm25
        self._dense = dense
        self._splade = splade
        first = next(leg for leg in (bm25, dense, splade) if leg is not None)
        self._doc_ids = first.doc_ids

    @classmethod
    def build(
        cls,
        corpus: Iterable[Document],
        *,
        retrievers: Sequence[str] = DEFAULT_RETRIEVERS,
        encoder: TextEncoder | None = None,
        splade_encoder: SparseEncoder | None = None,
        embedding_cache: EmbeddingCache | None = None,
        num_threads: int | None = None,
        show_progress: bool = False,
    ) -> HybridIndex:
        """Index a corpus with each of ``retrievers``.

        Parameters
        ----------
        corpus : iterable of str or dict
            Documents as in ``BM25Index.build``; read into memory once (every retriever
            indexes the same documents). Every document needs some text when ``"dense"`` or
            ``"splade"`` is used.
        retrievers : sequence of {"bm25", "dense", "splade"}
            Any of them; legs are kept in the order of ``RETRIEVERS`` whatever the order here.
            Default ``DEFAULT_RETRIEVERS``.
        encoder : TextEncoder, optional
            For ``"dense"``; the default ``Encoder.load()`` when None.
        splade_encoder : SparseEncoder, optional
            For ``"splade"``; the default ``SpladeEncoder.load()`` when None.
        embedding_cache : EmbeddingCache, optional
            Passed to ``DenseIndex.build``.
        num_threads, show_progress
            As in the retrievers' ``build``.

        Raises
        ------
        ValueError
            No or unknown retrievers, or what the retrievers' ``build`` raises.
        """
        chosen = _check_retrievers(retrievers)
        documents = list(corpus)
        if "dense" in chosen or "splade" in chosen:
            texts = [document_text(doc, i)[0] for i, doc in enumerate(documents)]
            check_texts(texts, "document")  # blank documents fail before any encoding
        bm25 = dense = splade = None
        if "bm25" in chosen:
            bm25 = BM25Index.build(documents, num_threads=num_threads, show_progress=show_progress)
        if "dense" in chosen:
            if encoder is None:
                from hybrid_engine.encoder import Encoder

                encoder = Encoder.load(num_threads=num_threads)
            dense = DenseIndex.build(
                documents,
                encoder=encoder,
                embedding_cache=embedding_cache,
                num_threads=num_threads,
                show_progress=show_progress,
            )
        if "splade" in chosen:
            splade = SpladeIndex.build(
                documents,
                encoder=splade_encoder,
                num_threads=num_threads,
                show_progress=show_progress,
            )
        return cls(bm25, dense, splade)

    @property
    def retrievers(self) -> tuple[str, ...]:
        """The retrievers this index combines."""
        legs = (self._bm25, self._dense, self._splade)
        return tuple(
            name for name, index in zip(RETRIEVERS, legs, strict=True) if index is not None
        )

    @property
    def bm25(self) -> BM25Index | None:
        """The BM25 leg, if any."""
        return self._bm25

    @property
    def dense(self) -> DenseIndex | None:
        """The dense leg, if any."""
        return self._dense

    @property
    def splade(self) -> SpladeIndex | None:
        """The SPLADE leg, if any."""
        return self._splade

    @property
    def doc_ids(self) -> DocIds:
        """The corpus ``_id`` of every position."""
        return self._doc_ids

    def __len__(self) -> int:
        return len(self._doc_ids)

    def __repr__(self) -> str:
        return f"HybridIndex({len(self)} documents, retrievers={list(self.retrievers)})"

    def search(
        self,
        queries: str | Sequence[str],
        k: int = 10,
        *,
        fusion: str = DEFAULT_METHOD,
        weights: Sequence[float] | None = None,
        depth: int = DEFAULT_DEPTH,
        mmr: float | None = None,
        mmr_candidates: int = 30,
        num_threads: int | None = None,
    ) -> HybridResult:
        """Search every retriever, fuse their top ``depth``, optionally re-order by MMR.

        Parameters
        ----------
        queries : str or sequence of str
            Query texts.
        k : int
            Hits per query (rows padded -1 / -inf as in every retriever).
        fusion, weights : see ``fusion.fuse``
            Weights in the order of ``retrievers``.
        depth : int
            Hits each retriever hands to fusion (at least ``k`` is used).
        mmr : float, optional
            MMR's lambda in ``[0, 1]`` (needs the dense leg): the fused top
            ``mmr_candidates`` are re-ordered by maximal marginal relevance. None: no MMR.
        num_threads : int, optional
            Threads of each stage that takes them.

        Returns
        -------
        HybridResult
            With ``timings`` in milliseconds per stage.

        Raises
        ------
        ValueError, TypeError
            Bad queries or parameters (as the stages raise them); ``mmr`` without the dense leg.
        """
        if isinstance(queries, str):
            queries = [queries]
        if mmr is not None and self._dense is None:
            raise ValueError(
                "mmr needs the dense retriever; build with retrievers=('bm25', 'dense')"
            )
        timings: dict[str, float] = {}
        start = time.perf_counter()
        width = max(int(k), int(depth), mmr_candidates if mmr is not None else 0)
        legs: list[SearchResult] = []
        if self._bm25 is not None:
            legs.append(self._bm25.search(queries, width, num_threads=num_threads))
            timings["bm25"] = (time.perf_counter() - start) * 1000
        query_vectors: Any = None
        if self._dense is not None:
            tick = time.perf_counter()
            encoder = self._dense.encoder
            assert encoder is not None  # build and load always give the dense leg one
            # Encoded once here, so MMR reuses the vectors.
            query_vectors = encoder.encode(list(queries))
            legs.append(self._dense.search(query_vectors, width, num_threads=num_threads))
            timings["dense"] = (time.perf_counter() - tick) * 1000
        if self._splade is not None:
            tick = time.perf_counter()
            legs.append(self._splade.search(queries, width, num_threads=num_threads))
            timings["splade"] = (time.perf_counter() - tick) * 1000
        tick = time.perf_counter()
        fused_k = mmr_candidates if mmr is not None else int(k)
        result = fuse(legs, fused_k, method=fusion, weights=weights, depth=width)
        timings["fusion"] = (time.perf_counter() - tick) * 1000
        if mmr is not None and self._dense is not None:
            tick = time.perf_counter()
            result = mmr_rerank(result, query_vectors, self._dense.vectors, int(k), lambda_=mmr)
            timings["mmr"] = (time.perf_counter() - tick) * 1000
        timings["total"] = (time.perf_counter() - start) * 1000
        return HybridResult(result.ids, result.scores, timings)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to directory ``path`` atomically, every leg inside it."""
        directories = {}
        if self._bm25 is not None:
            directories["bm25"] = self._bm25.save
        if self._dense is not None:
            directories["dense"] = self._dense.save
        if self._splade is not None:
            directories["splade"] = self._splade.save
        metadata = {"retrievers": list(self.retrievers), "num_documents": len(self)}
        write_index_dir(path, FORMAT, FORMAT_VERSION, metadata, {}, directories=directories)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        encoder: TextEncoder | None = None,
        splade_encoder: SparseEncoder | None = None,
        mmap: bool = False,
    ) -> HybridIndex:
        """Read an index written by ``save``.

        Parameters
        ----------
        encoder : TextEncoder, optional
            For the dense leg's text queries; the default ``Encoder.load()`` when None. It must
            be the model that built the index.
        splade_encoder : SparseEncoder, optional
            For the SPLADE leg; the default ``SpladeEncoder.load()`` when None. It must be the
            model that built the index.

        Raises
        ------
        IndexFormatError
            A missing, corrupt or foreign directory, or legs that disagree.
        """
        manifest, _ = read_index_dir(path, FORMAT, FORMAT_VERSION)
        try:
            chosen = _check_retrievers(manifest["retrievers"])
            n_docs = int(manifest["num_documents"])
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexFormatError(
                f"{path}: bad manifest entry ({exc}); rebuild the index"
            ) from None
        root = Path(path)
        bm25 = BM25Index.load(root / "bm25", mmap=mmap) if "bm25" in chosen else None
        dense = None
        if "dense" in chosen:
            if encoder is None:
                from hybrid_engine.encoder import Encoder

                encoder = Encoder.load()
            dense = DenseIndex.load(root / "dense", encoder=encoder, mmap=mmap)
        splade = None
        if "splade" in chosen:
            splade = SpladeIndex.load(root / "splade", encoder=splade_encoder, mmap=mmap)
        for leg in (bm25, dense, splade):
            if leg is not None and len(leg.doc_ids) != n_docs:
                raise IndexFormatError(
                    f"{path}: a leg holds {len(leg.doc_ids)} documents, the manifest {n_docs}; "
                    "rebuild the index"
                )
        return cls(bm25, dense, splade)


def _check_retrievers(retrievers: Sequence[str]) -> tuple[str, ...]:
    if isinstance(retrievers, str):
        retrievers = [retrievers]
    unknown = [r for r in retrievers if r not in RETRIEVERS]
    if unknown or not retrievers:
        raise ValueError(f"unknown retriever(s) {unknown or retrievers}; choose from {RETRIEVERS}")
    return tuple(r for r in RETRIEVERS if r in retrievers)
