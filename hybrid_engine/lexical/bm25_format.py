"""The on-disk format of a BM25 index: its arrays and manifest, written and read back with
every array's structure checked."""

from __future__ import annotations

import os
from dataclasses import asdict, fields
from typing import Any

import numpy as np

from hybrid_engine.corpus import DocIds
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.lexical._postings_decode import check_terms
from hybrid_engine.lexical.analysis import AnalyzerConfig
from hybrid_engine.lexical.bm25_params import BM25Params
from hybrid_engine.lexical.postings_check import PostingsCheck
from hybrid_engine.storage import delimits, read_index_dir, write_index_dir

FORMAT = "hybrid_engine.bm25"
FORMAT_VERSION = 1
_INDEX_ARRAYS = {
    "vocab_bytes": np.uint8,
    "vocab_offsets": np.int64,
    "doc_freqs": np.int32,
    "posting_offsets": np.int64,
    "postings": np.uint8,
    "doc_lengths": np.int32,
}
_PARAM_NAMES = {f.name for f in fields(BM25Params)}


def write_index(
    path: str | os.PathLike[str],
    arrays: dict[str, np.ndarray],
    params: BM25Params,
    analyzer: AnalyzerConfig,
    doc_ids: DocIds,
    stats: dict[str, Any],
) -> None:
    """Write an index's arrays, ids and manifest to directory ``path`` atomically (see
    ``storage.write_index_dir``); ``stats`` is recorded in the manifest as it is."""
    files = {name: arrays[name] for name in _INDEX_ARRAYS}
    files.update(doc_ids.arrays())
    metadata: dict[str, Any] = {
        "params": asdict(params),
        "analyzer": analyzer.to_dict(),
        "stats": stats,
        "doc_ids": doc_ids.mode,
    }
    write_index_dir(path, FORMAT, FORMAT_VERSION, metadata, files)


def read_index(
    path: str | os.PathLike[str], *, mmap: bool, verify: bool
) -> tuple[dict[str, np.ndarray], BM25Params, AnalyzerConfig, DocIds, PostingsCheck]:
    """Read an index directory written by ``write_index``: its arrays (checked, see
    ``_check_arrays``), parameters, analyzer settings and document ids.

    With ``verify``, every file's sha256 and every posting list are checked now; without,
    neither is, and the ``PostingsCheck`` returned checks each posting list when a search
    first reads it, so that opening the index reads none of them.

    Raises
    ------
    IndexFormatError
        The directory is missing, truncated, corrupt, or not a BM25 index of this format.
    """
    manifest, arrays = read_index_dir(path, FORMAT, FORMAT_VERSION, mmap=mmap, verify=verify)
    try:
        saved_params = manifest["params"]
        # Every parameter must be recorded: a missing one would silently take its default.
        if not isinstance(saved_params, dict) or set(saved_params) != _PARAM_NAMES:
            raise ValueError(f"params {saved_params!r} must set exactly {sorted(_PARAM_NAMES)}")
        params = BM25Params(**saved_params)
        analyzer = AnalyzerConfig.from_dict(manifest["analyzer"])
        analyzer.to_core()
        n_docs = int(manifest["stats"]["num_documents"])
        saved_ids = manifest["doc_ids"]
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(f"{path}: bad manifest entry ({exc}); rebuild the index") from None
    _check_arrays(path, arrays, n_docs)
    offsets, postings, doc_freqs = (arrays[n] for n in ("posting_offsets", "postings", "doc_freqs"))
    check = PostingsCheck(
        lambda terms, checked: check_terms(offsets, postings, doc_freqs, n_docs, terms, checked),
        len(doc_freqs),
        str(path),
    )
    if verify:
        check.everything()
    doc_ids = DocIds.from_saved(path, saved_ids, arrays, n_docs)
    return arrays, params, analyzer, doc_ids, check


def _check_arrays(path: str | os.PathLike[str], arrays: dict[str, np.ndarray], n_docs: int) -> None:
    """Raise IndexFormatError unless the arrays form a consistent index of ``n_docs`` docs,
    all but the posting lists themselves (``PostingsCheck``: their cost grows with them)."""

    def fail(what: str) -> IndexFormatError:
        return IndexFormatError(f"{path}: {what}; the index is corrupt, rebuild it")

    expected = dict(_INDEX_ARRAYS)
    if "doc_id_bytes" in arrays or "doc_id_offsets" in arrays:
        expected.update(doc_id_bytes=np.uint8, doc_id_offsets=np.int64)
    if set(arrays) != set(expected):
        raise fail(f"expected arrays {sorted(expected)}, found {sorted(arrays)}")
    for name, dtype in expected.items():
        if arrays[name].dtype != dtype or arrays[name].ndim != 1:
            raise fail(f"{name} is {arrays[name].dtype} with {arrays[name].ndim} dims")
    n_terms = len(arrays["doc_freqs"])
    if n_docs < 1 or len(arrays["doc_lengths"]) != n_docs:
        raise fail(f"doc_lengths has {len(arrays['doc_lengths'])} entries for {n_docs} documents")
    for offsets, data, count in (
        ("vocab_offsets", "vocab_bytes", n_terms),
        ("posting_offsets", "postings", n_terms),
    ):
        if not delimits(arrays[offsets], arrays[data], count):
            raise fail(f"{offsets} does not delimit {data}")
    if np.any(arrays["doc_lengths"] < 0) or np.any(arrays["doc_freqs"] < 1):
        raise fail("negative document lengths or empty posting lists")
