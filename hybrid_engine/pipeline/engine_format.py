"""A ``HybridIndex`` on disk: one directory holding every leg's directory and the texts.

Written by ``storage.write_index_dir`` (atomically)::

    manifest.json     format "hybrid_engine.hybrid", the retrievers, the document count, and
                      "models": the model of each model leg ({"dense": {"name": ...,
                      "variant": ...}, "splade": ...}; null for an encoder that is not a
                      prepared model), which ``read_engine`` loads when given no encoder
    text_bytes.npy    the documents' text (title and text), what a cross-encoder reads,
    text_offsets.npy  packed as in ``packed``
    title_bytes.npy   the documents' titles ("" where none), for display, packed the same way
    title_offsets.npy
    bm25/             a BM25Index directory
    dense/            a DenseIndex directory
    splade/           a SpladeIndex directory
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.lexical.bm25 import BM25Index
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.session import TextModel
from hybrid_engine.models.splade import SpladeEncoder
from hybrid_engine.models.store import VARIANT_FILES, ModelNotFoundError
from hybrid_engine.packed import PackedStrings
from hybrid_engine.pipeline.legs import Legs, check_retrievers
from hybrid_engine.protocols import SparseEncoder, TextEncoder
from hybrid_engine.sparse.index import SpladeIndex
from hybrid_engine.storage import open_index_dir, read_index_dir, write_index_dir

FORMAT = "hybrid_engine.hybrid"
FORMAT_VERSION = 3
_MODEL_LEGS = {"dense": "encoder", "splade": "splade_encoder"}
"""The legs that run a model, and the ``HybridIndex.load`` argument that gives it."""
_Model = TypeVar("_Model", bound=TextModel)


def write_engine(
    path: str | os.PathLike[str], legs: Legs, texts: PackedStrings, titles: PackedStrings
) -> None:
    """Write the legs, texts and titles of an engine to directory ``path`` atomically."""
    bm25, dense, splade = legs
    directories = {}
    if bm25 is not None:
        directories["bm25"] = bm25.save
    if dense is not None:
        directories["dense"] = dense.save
    if splade is not None:
        directories["splade"] = splade.save
    models = {}
    if dense is not None:
        models["dense"] = _model_record(dense.encoder)
    if splade is not None:
        models["splade"] = _model_record(splade.encoder)
    metadata = {
        "retrievers": list(legs.retrievers),
        "num_documents": len(texts),
        "models": models,
    }
    arrays = {**texts.arrays("text"), **titles.arrays("title")}
    write_index_dir(path, FORMAT, FORMAT_VERSION, metadata, arrays, directories=directories)


def read_engine(
    path: str | os.PathLike[str],
    *,
    encoder: TextEncoder | None,
    splade_encoder: SparseEncoder | None,
    num_threads: int | None,
    mmap: bool,
) -> tuple[Legs, PackedStrings, PackedStrings]:
    """The legs, texts and titles ``write_engine`` wrote to ``path``, all from one save
    (``HybridIndex.load`` documents the arguments).

    Raises
    ------
    IndexFormatError
        A missing, corrupt or foreign directory, or legs that disagree with the manifest.
    ValueError
        No encoder given for a leg built with one that is not a prepared model.
    ModelNotFoundError
        No encoder given, and the recorded model is not prepared here.
    """
    with open_index_dir(path) as root:  # every part from the save the manifest comes from
        manifest, arrays = read_index_dir(root, FORMAT, FORMAT_VERSION, mmap=mmap, shown_as=path)
        return _read_parts(path, root, manifest, arrays, encoder, splade_encoder, num_threads, mmap)


def _read_parts(
    path: str | os.PathLike[str],
    root: Path,
    manifest: dict[str, Any],
    arrays: dict[str, Any],
    encoder: TextEncoder | None,
    splade_encoder: SparseEncoder | None,
    num_threads: int | None,
    mmap: bool,
) -> tuple[Legs, PackedStrings, PackedStrings]:
    """The engine pinned at ``root`` (the user's ``path``), from its read manifest."""
    try:
        chosen = check_retrievers(manifest["retrievers"])
        n_docs = int(manifest["num_documents"])
        texts = PackedStrings.from_arrays(arrays, n_docs, "text")
        titles = PackedStrings.from_arrays(arrays, n_docs, "title")
        models = _read_records(manifest["models"], chosen)
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(f"{path}: bad manifest entry ({exc}); rebuild the index") from None
    if "dense" in chosen and encoder is None:
        encoder = _load_model(Encoder, path, "dense", models, num_threads)
    if "splade" in chosen and splade_encoder is None:
        splade_encoder = _load_model(SpladeEncoder, path, "splade", models, num_threads)
    with _named_as(root, path):
        bm25 = BM25Index.load(root / "bm25", mmap=mmap) if "bm25" in chosen else None
        dense = None
        if "dense" in chosen:
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
    return Legs(bm25, dense, splade), texts, titles


def _model_record(encoder: object) -> dict[str, str] | None:
    """``{"name", "variant"}`` of a prepared model (what ``Encoder.load`` and
    ``SpladeEncoder.load`` take back), None for any other encoder."""
    if isinstance(encoder, TextModel):
        return {"name": encoder.name, "variant": encoder.variant}
    return None


def _read_records(records: Any, retrievers: tuple[str, ...]) -> dict[str, tuple[str, str] | None]:
    """The manifest's ``"models"`` as leg to (name, variant), or None; ValueError or
    TypeError when malformed or missing a model leg of ``retrievers``."""
    if not isinstance(records, dict):
        raise TypeError(f"models is {type(records).__name__}, not a dict")
    missing = [leg for leg in _MODEL_LEGS if leg in retrievers and leg not in records]
    if missing:
        raise ValueError(f"models records no model of the {', '.join(missing)} leg")
    models: dict[str, tuple[str, str] | None] = {}
    for leg, record in records.items():
        if leg not in _MODEL_LEGS:
            raise ValueError(f"models names leg {leg!r}")
        if record is None:
            models[leg] = None
            continue
        name, variant = record["name"], record["variant"]
        if not isinstance(name, str) or variant not in VARIANT_FILES:
            raise ValueError(f"models[{leg!r}] is {record!r}")
        models[leg] = (name, variant)
    return models


@contextmanager
def _named_as(root: Path, path: str | os.PathLike[str]) -> Iterator[None]:
    """Errors of the legs read from the pinned ``root`` name the user's ``path`` instead."""
    try:
        yield
    except (IndexFormatError, ValueError) as exc:
        raise type(exc)(str(exc).replace(str(root), os.fspath(path))) from None


def _load_model(
    cls: type[_Model],
    path: str | os.PathLike[str],
    leg: str,
    models: dict[str, tuple[str, str] | None],
    num_threads: int | None,
) -> _Model:
    """The model (of class ``cls``) that built ``leg``, as ``models`` records it."""
    argument = _MODEL_LEGS[leg]
    record = models[leg]
    if record is None:
        raise ValueError(
            f"{path}: the {leg} leg was built with an encoder that is not a prepared model, so "
            f"the index cannot load it by name; pass {argument}= to HybridIndex.load"
        )
    name, variant = record
    try:
        return cls.load(name, variant=variant, num_threads=num_threads)
    except ModelNotFoundError as exc:
        raise ModelNotFoundError(
            f"{path} was built with the {leg} model {name!r} ({variant}): {exc}; or pass "
            f"{argument}= to HybridIndex.load"
        ) from None
