"""A SPLADE index on disk: the postings (``posting_offsets``, ``doc_ids``, uint8 ``impacts``),
the ids (when given) and a manifest with the quantization scale, the counts and the encoder's
``model_hash`` (``storage.write_index_dir``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from hybrid_engine.checks import check_int
from hybrid_engine.corpus import DocIds, check_saved_arrays
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.lexical.postings_check import PostingsCheck
from hybrid_engine.sparse._impacts_check import check_impact_terms
from hybrid_engine.sparse.vectors import IMPACT_LEVELS
from hybrid_engine.storage import delimits, read_index_dir, write_index_dir

FORMAT = "hybrid_engine.splade"
FORMAT_VERSION = 1
INDEX_ARRAYS: dict[str, type[np.generic]] = {
    "posting_offsets": np.int64,
    "doc_ids": np.int32,
    "impacts": np.uint8,
}
"""The postings' arrays and their dtypes."""
_FLOAT32_MAX = float(np.finfo(np.float32).max)
MAX_ID = 2**31 - 1
"""Documents and vocabulary terms an index may count, at most (their ids are int32)."""


@dataclass(frozen=True)
class SavedSplade:
    """What ``read_splade`` read, checked."""

    arrays: dict[str, np.ndarray]
    scale: float
    doc_ids: DocIds
    vocab_size: int
    model_hash: str
    check: PostingsCheck
    """Checks each posting list when a search first reads it (all of them already, with
    ``verify``)."""


def write_splade(
    path: str | os.PathLike[str],
    arrays: dict[str, np.ndarray],
    scale: float,
    doc_ids: DocIds,
    vocab_size: int,
    model_hash: str,
) -> None:
    """Write a SPLADE index's postings ``arrays`` to directory ``path`` atomically."""
    saved = {name: arrays[name] for name in INDEX_ARRAYS}
    saved.update(doc_ids.arrays())
    metadata: dict[str, Any] = {
        "quantization": {"scale": scale, "levels": IMPACT_LEVELS, "dtype": "uint8"},
        "stats": {
            "num_documents": len(doc_ids),
            "vocab_size": vocab_size,
            "num_postings": len(arrays["doc_ids"]),
        },
        "doc_ids": doc_ids.mode,
        "encoder_model_hash": model_hash,
    }
    write_index_dir(path, FORMAT, FORMAT_VERSION, metadata, saved)


def read_splade(path: str | os.PathLike[str], *, mmap: bool, verify: bool) -> SavedSplade:
    """Read and check a directory written by ``write_splade`` (see ``SpladeIndex.load``).

    With ``verify``, every file's sha256 and every posting list are checked now; without,
    neither is: the arrays' dtypes, lengths and offsets are (``_check_arrays``, work that
    grows with the vocabulary, not the postings), and the ``check`` returned checks each
    posting list when a search first reads it, so that opening the index reads no posting.

    Raises
    ------
    IndexFormatError
        The directory is missing, truncated, corrupt, or not a SPLADE index of this format.
    """
    manifest, arrays = read_index_dir(path, FORMAT, FORMAT_VERSION, mmap=mmap, verify=verify)
    try:
        quantization = manifest["quantization"]
        scale = float(quantization["scale"])
        if quantization["levels"] != IMPACT_LEVELS or quantization["dtype"] != "uint8":
            raise ValueError(f"quantization {quantization!r}")
        # An impact's weight (impact * scale) must be a float32, as the encoder's were.
        if not np.isfinite(scale) or scale <= 0 or scale * IMPACT_LEVELS > _FLOAT32_MAX:
            raise ValueError(f"scale {scale}")
        # Ints (not "7" or 1.5) within int32, the dtype of the doc and term ids: a count is
        # all that bounds the documents of an index without explicit ids.
        n_docs = check_int("num_documents", manifest["stats"]["num_documents"], 1, MAX_ID)
        vocab_size = check_int("vocab_size", manifest["stats"]["vocab_size"], 1, MAX_ID)
        saved_ids = manifest["doc_ids"]
        model_hash = manifest["encoder_model_hash"]
        if not isinstance(model_hash, str):
            raise ValueError(f"encoder_model_hash is {model_hash!r}, not a str")
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(f"{path}: bad manifest entry ({exc}); rebuild the index") from None
    _check_arrays(path, arrays, n_docs, vocab_size, "doc_id_bytes" in arrays)
    offsets, docs, impacts = (arrays[name] for name in INDEX_ARRAYS)
    check = PostingsCheck(
        lambda terms, checked: check_impact_terms(offsets, docs, impacts, n_docs, terms, checked),
        vocab_size,
        str(path),
    )
    if verify:
        check.everything()
    doc_ids = DocIds.from_saved(path, saved_ids, arrays, n_docs)
    index_arrays = {name: arrays[name] for name in INDEX_ARRAYS}
    return SavedSplade(index_arrays, scale, doc_ids, vocab_size, model_hash, check)


def _check_arrays(
    path: str | os.PathLike[str],
    arrays: dict[str, np.ndarray],
    n_docs: int,
    vocab_size: int,
    explicit: bool,
) -> None:
    """Raise IndexFormatError unless the arrays form postings of ``n_docs`` documents over
    ``vocab_size`` terms, all but the posting lists themselves (``check_impact_terms``: their
    cost grows with them)."""

    def fail(what: str) -> IndexFormatError:
        return IndexFormatError(f"{path}: {what}; the index is corrupt, rebuild it")

    check_saved_arrays(path, arrays, INDEX_ARRAYS, explicit)
    if n_docs < 1 or vocab_size < 1:
        raise fail(f"{n_docs} documents, {vocab_size} terms")
    offsets, docs, impacts = arrays["posting_offsets"], arrays["doc_ids"], arrays["impacts"]
    if not delimits(offsets, docs, vocab_size) or len(impacts) != len(docs):
        raise fail("posting_offsets does not delimit doc_ids and impacts")
