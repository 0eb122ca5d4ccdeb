"""A segment: an immutable batch of documents with every leg built over them.

A live ``HybridIndex`` is a sequence of segments (plus deletion masks, ``snapshot``). A segment
holds its documents' external ids, indexed texts, titles and metadata columns, and a BM25, a
dense and a SPLADE index over them (those the engine combines), built with the engine's
settings (``EngineConfig``). It is written once (``save``) and never changed: deleting a
document marks it in the snapshot's mask, and merging segments builds a new one from the live
documents of the old ones, reusing their vectors (no model runs).

On disk a segment is an index directory (``storage.write_index_dir``)::

    manifest.json            format "hybrid_engine.segment", the document count, the
                             metadata columns' description
    id_*.npy                 the external ids, packed (``packed``)
    text_z*.npy title_z*.npy the indexed texts (title and text) and the titles, compressed
                             in blocks (``compressed``)
    meta_*.npy               the metadata columns (``metadata.MetadataColumns``)
    bm25/ dense/ splade/     the legs' own directories

Format version 1 (still read) stored texts and titles packed, as ``text_bytes.npy``,
``text_offsets.npy``, ``title_bytes.npy`` and ``title_offsets.npy``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.lexical.index import BM25Index
from hybrid_engine.live.config import EngineConfig
from hybrid_engine.live.documents import LiveDocuments
from hybrid_engine.protocols import SparseEncoder, TextEncoder
from hybrid_engine.result import SparseVectors
from hybrid_engine.sparse.index import SpladeIndex
from hybrid_engine.storage import in_memory_except, read_index_dir, write_index_dir

FORMAT = "hybrid_engine.segment"
FORMAT_VERSION = 2
OLDER_VERSIONS = (1,)
"""Versions still read: 1 (texts and titles packed, not compressed)."""
_COLD_PREFIXES = ("text_", "title_")
"""The arrays ``load(mmap="cold")`` leaves mapped: stored texts and titles, read for hits."""


@dataclass(frozen=True)
class Segment:
    """Documents and the legs built over them, immutable.

    Attributes
    ----------
    docs : LiveDocuments
        Ids, texts, titles and metadata, by local position.
    bm25, dense, splade : optional
        The legs of the engine's retrievers (None for the others); local positions.
    """

    docs: LiveDocuments
    bm25: BM25Index | None
    dense: DenseIndex | None
    splade: SpladeIndex | None

    def __len__(self) -> int:
        return len(self.docs)

    @classmethod
    def build(
        cls,
        docs: LiveDocuments,
        config: EngineConfig,
        *,
        encoder: TextEncoder | None,
        splade_encoder: SparseEncoder | None,
        embedding_cache: EmbeddingCache | None = None,
        num_threads: int | None = None,
        show_progress: bool = False,
    ) -> Segment:
        """Index ``docs`` (at least one) with every retriever of ``config``; the segment keeps
        them compressed (``LiveDocuments.compressed``)."""
        texts = list(docs.texts)
        bm25 = dense = splade = None
        if "bm25" in config.retrievers:
            bm25 = BM25Index.build(
                config.bm25_texts(docs.titles, texts),
                num_threads=num_threads,
                show_progress=show_progress,
                **config.bm25_build,
            )
        if "dense" in config.retrievers:
            assert encoder is not None  # the engine loads the default one
            dense = DenseIndex.build(
                texts,
                encoder=encoder,
                embedding_cache=embedding_cache,
                num_threads=num_threads,
                show_progress=show_progress,
                **config.dense,
            )
        if "splade" in config.retrievers:
            splade = SpladeIndex.build(
                texts,
                encoder=splade_encoder,
                scale=config.splade_scale,
                num_threads=num_threads,
                show_progress=show_progress,
            )
        return cls(docs.compressed(), bm25, dense, splade)

    @classmethod
    def merged(
        cls,
        parts: Sequence[tuple[Segment, np.ndarray]],
        config: EngineConfig,
        *,
        encoder: TextEncoder | None,
        splade_encoder: SparseEncoder | None,
        num_threads: int | None = None,
    ) -> Segment:
        """One segment of the documents at the ``positions`` (int64, ascending) of each
        ``(segment, positions)`` of ``parts``, in that order: BM25 re-analyses their texts,
        dense and SPLADE reuse their vectors (the same SPLADE scale, so the same impacts)."""
        docs = LiveDocuments.concat([segment.docs.take(rows) for segment, rows in parts])
        bm25 = dense = splade = None
        if "bm25" in config.retrievers:
            bm25 = BM25Index.build(
                config.bm25_texts(docs.titles, docs.texts),
                num_threads=num_threads,
                **config.bm25_build,
            )
        if "dense" in config.retrievers:
            vectors = [seg.dense.vectors[rows] for seg, rows in parts if seg.dense is not None]
            options = {key: value for key, value in config.dense.items() if key != "batch_size"}
            dense = DenseIndex.from_vectors(
                np.concatenate(vectors), encoder=encoder, num_threads=num_threads, **options
            )
        if "splade" in config.retrievers:
            sparse = [seg.splade.document_vectors(rows) for seg, rows in parts if seg.splade]
            splade = SpladeIndex.from_vectors(
                _concat_sparse(sparse), encoder=splade_encoder, scale=config.splade_scale
            )
        return cls(docs.compressed(), bm25, dense, splade)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the segment to the new directory ``path`` (atomically)."""
        arrays, description = self.docs.to_arrays()
        directories = {}
        for name, leg in (("bm25", self.bm25), ("dense", self.dense), ("splade", self.splade)):
            if leg is not None:
                directories[name] = leg.save
        metadata = {"num_documents": len(self), "documents": description}
        write_index_dir(path, FORMAT, FORMAT_VERSION, metadata, arrays, directories=directories)

    @classmethod
    def load(
        cls,
        path: Path,
        config: EngineConfig,
        *,
        encoder: TextEncoder | None,
        splade_encoder: SparseEncoder | None,
        mmap: bool | str = False,
    ) -> Segment:
        """Read a segment written by ``save`` (or of an ``OLDER_VERSIONS``), with the legs of
        ``config``'s retrievers (its arrays and theirs memory-mapped with ``mmap``: True maps
        every array; ``"cold"`` only the stored texts and titles and the float32 vectors of a
        quantized dense leg, ``DenseIndex.load``).

        Raises
        ------
        IndexFormatError
            A missing, corrupt or foreign directory, or legs that disagree with it.
        """
        manifest, arrays = read_index_dir(
            path, FORMAT, FORMAT_VERSION, mmap=bool(mmap), older_versions=OLDER_VERSIONS
        )
        if mmap == "cold":  # ids and metadata (filters) in memory; texts read for hits only
            arrays = in_memory_except(arrays, lambda name: name.startswith(_COLD_PREFIXES))
        try:
            n_docs = int(manifest["num_documents"])
            docs = LiveDocuments.from_arrays(arrays, manifest["documents"], n_docs, shown=path)
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexFormatError(f"{path}: bad segment ({exc}); rebuild the index") from None
        retrievers = config.retrievers
        # "cold" reads the postings (every search reads them) but builds no BM25 impact cache
        # (8 bytes a posting): the memory-lean mode scores from the postings themselves.
        postings_mapped = mmap is True
        bm25 = None
        if "bm25" in retrievers:
            impacts = False if mmap == "cold" else None
            bm25 = BM25Index.load(path / "bm25", mmap=postings_mapped, cache_impacts=impacts)
        dense = None
        if "dense" in retrievers:
            dense = DenseIndex.load(path / "dense", encoder=encoder, mmap=mmap)
        splade = None
        if "splade" in retrievers:
            splade = SpladeIndex.load(path / "splade", encoder=splade_encoder, mmap=postings_mapped)
        for leg in (bm25, dense, splade):
            if leg is not None and len(leg.doc_ids) != n_docs:
                raise IndexFormatError(
                    f"{path}: a leg holds {len(leg.doc_ids)} documents, the segment {n_docs}; "
                    "rebuild the index"
                )
        return cls(docs, bm25, dense, splade)


def _concat_sparse(parts: Sequence[SparseVectors]) -> SparseVectors:
    """The rows of several ``SparseVectors`` as one."""
    terms = np.concatenate([p.terms for p in parts])
    weights = np.concatenate([p.weights for p in parts])
    ends = [p.offsets[1:] for p in parts]
    shifts = np.cumsum([0] + [int(p.offsets[-1]) for p in parts[:-1]])
    pieces = [e + s for e, s in zip(ends, shifts, strict=True)]
    offsets = np.concatenate([np.zeros(1, np.int64), *pieces]).astype(np.int64)
    return SparseVectors(offsets, terms, weights)
