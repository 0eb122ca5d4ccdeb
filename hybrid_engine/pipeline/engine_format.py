"""A ``HybridIndex`` on disk: one directory holding every leg's directory and the texts.

Written by ``storage.write_index_dir`` (atomically)::

    manifest.json     format "hybrid_engine.hybrid", the retrievers, the document count
    text_bytes.npy    the documents' text (title and text), what a cross-encoder reads,
    text_offsets.npy  packed as in ``packed``
    bm25/             a BM25Index directory
    dense/            a DenseIndex directory
    splade/           a SpladeIndex directory
"""

from __future__ import annotations

import os
from pathlib import Path

from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.lexical.bm25 import BM25Index
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.splade import SpladeEncoder
from hybrid_engine.packed import PackedStrings
from hybrid_engine.pipeline.legs import Legs, check_retrievers
from hybrid_engine.protocols import SparseEncoder, TextEncoder
from hybrid_engine.sparse.index import SpladeIndex
from hybrid_engine.storage import read_index_dir, write_index_dir

FORMAT = "hybrid_engine.hybrid"
FORMAT_VERSION = 2


def write_engine(path: str | os.PathLike[str], legs: Legs, texts: PackedStrings) -> None:
    """Write the legs and texts of an engine to directory ``path`` atomically."""
    bm25, dense, splade = legs
    directories = {}
    if bm25 is not None:
        directories["bm25"] = bm25.save
    if dense is not None:
        directories["dense"] = dense.save
    if splade is not None:
        directories["splade"] = splade.save
    metadata = {"retrievers": list(legs.retrievers), "num_documents": len(texts)}
    write_index_dir(
        path, FORMAT, FORMAT_VERSION, metadata, texts.arrays("text"), directories=directories
    )


def read_engine(
    path: str | os.PathLike[str],
    *,
    encoder: TextEncoder | None,
    splade_encoder: SparseEncoder | None,
    num_threads: int | None,
    mmap: bool,
) -> tuple[Legs, PackedStrings]:
    """The legs and texts ``write_engine`` wrote to ``path`` (``HybridIndex.load`` documents
    the arguments).

    Raises
    ------
    IndexFormatError
        A missing, corrupt or foreign directory, or legs that disagree with the manifest.
    """
    manifest, arrays = read_index_dir(path, FORMAT, FORMAT_VERSION, mmap=mmap)
    try:
        chosen = check_retrievers(manifest["retrievers"])
        n_docs = int(manifest["num_documents"])
        texts = PackedStrings.from_arrays(arrays, n_docs, "text")
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(f"{path}: bad manifest entry ({exc}); rebuild the index") from None
    root = Path(path)
    bm25 = BM25Index.load(root / "bm25", mmap=mmap) if "bm25" in chosen else None
    dense = None
    if "dense" in chosen:
        if encoder is None:
            encoder = Encoder.load(num_threads=num_threads)
        dense = DenseIndex.load(root / "dense", encoder=encoder, mmap=mmap)
    splade = None
    if "splade" in chosen:
        if splade_encoder is None:
            splade_encoder = SpladeEncoder.load(num_threads=num_threads)
        splade = SpladeIndex.load(root / "splade", encoder=splade_encoder, mmap=mmap)
    for leg in (bm25, dense, splade):
        if leg is not None and len(leg.doc_ids) != n_docs:
            raise IndexFormatError(
                f"{path}: a leg holds {len(leg.doc_ids)} documents, the manifest {n_docs}; "
                "rebuild the index"
            )
    return Legs(bm25, dense, splade), texts
