"""The on-disk format of a BM25 index: its arrays and manifest, written and read back with
every array's structure checked.

Version 2 adds ``vocab_slots``: the hash table of the vocabulary as the C++ term table lays it
out (``StringTable::slots()``, csrc/include/hybrid_engine/string_table.hpp), so that a load
looks terms up in the saved arrays in place (memory-mapped too) instead of inserting every
term into a new table. Version 1 indexes, without it, still load: their table is built at load
as it always was, and saving one writes version 3.

Version 3 adds the optional positions of an index built with ``positions=True``
(``position_offsets`` and ``positions``, layout in csrc/include/hybrid_engine/postings.hpp),
recorded as ``"positions": true`` in the manifest; without them it is version 2's layout, and
version 2 indexes load as ones without positions.
"""

from __future__ import annotations

import os
from dataclasses import asdict, fields
from typing import Any

import numpy as np

from hybrid_engine import _core
from hybrid_engine.corpus import DocIds, check_saved_arrays
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.lexical._phrase import check_positions
from hybrid_engine.lexical._postings_decode import check_terms
from hybrid_engine.lexical.analysis import AnalyzerConfig
from hybrid_engine.lexical.params import BM25Params
from hybrid_engine.lexical.postings_check import PostingsCheck
from hybrid_engine.storage import delimits, read_index_dir, write_index_dir

FORMAT = "hybrid_engine.bm25"
FORMAT_VERSION = 3
OLDER_VERSIONS = (1, 2)
"""The versions before ``FORMAT_VERSION`` that ``read_index`` reads too."""
_INDEX_ARRAYS: dict[str, type[np.generic]] = {
    "vocab_bytes": np.uint8,
    "vocab_offsets": np.int64,
    "vocab_slots": np.uint64,
    "doc_freqs": np.int32,
    "posting_offsets": np.int64,
    "postings": np.uint8,
    "doc_lengths": np.int32,
}
_V1_ARRAYS = {name: dtype for name, dtype in _INDEX_ARRAYS.items() if name != "vocab_slots"}
_POSITION_ARRAYS: dict[str, type[np.generic]] = {
    "position_offsets": np.int64,
    "positions": np.uint8,
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
    positions = "positions" in arrays
    names = [*_INDEX_ARRAYS, *(_POSITION_ARRAYS if positions else ())]
    files = {name: arrays[name] for name in names}
    files.update(doc_ids.arrays())
    metadata: dict[str, Any] = {
        "params": asdict(params),
        "analyzer": analyzer.to_dict(),
        "stats": stats,
        "doc_ids": doc_ids.mode,
        "positions": positions,
    }
    write_index_dir(path, FORMAT, FORMAT_VERSION, metadata, files)


def read_index(
    path: str | os.PathLike[str], *, mmap: bool, verify: bool
) -> tuple[dict[str, np.ndarray], BM25Params, AnalyzerConfig, DocIds, PostingsCheck]:
    """Read an index directory written by ``write_index``: its arrays (checked, see
    ``_check_arrays``), parameters, analyzer settings and document ids.

    With ``verify``, every file's sha256, every posting list and the vocabulary's hash table
    are checked now; without, none is: the ``PostingsCheck`` returned checks each posting list
    when a search first reads it, and the table is used as saved (lookups in it stay within
    the arrays whatever it holds: a corrupt one can only make terms not found), so that opening
    the index reads neither. A version 1 index gets its table built here (``vocab_slots`` in
    the arrays returned, as in a version 2 one).

    Raises
    ------
    IndexFormatError
        The directory is missing, truncated, corrupt, or not a BM25 index of this format.
    """
    manifest, arrays = read_index_dir(
        path, FORMAT, FORMAT_VERSION, mmap=mmap, verify=verify, older_versions=OLDER_VERSIONS
    )
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
        positions = manifest.get("positions", False)
        if not isinstance(positions, bool):
            raise TypeError(f"positions is {positions!r}, not true or false")
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(f"{path}: bad manifest entry ({exc}); rebuild the index") from None
    version = manifest["format_version"]
    expected = _V1_ARRAYS if version == 1 else _INDEX_ARRAYS
    _check_arrays(path, arrays, n_docs, expected | (_POSITION_ARRAYS if positions else {}))
    _vocabulary_table(path, arrays, build=version == 1, verify=verify)
    offsets, postings, doc_freqs = (arrays[n] for n in ("posting_offsets", "postings", "doc_freqs"))
    check = PostingsCheck(
        lambda terms, checked: check_terms(offsets, postings, doc_freqs, n_docs, terms, checked),
        len(doc_freqs),
        str(path),
    )
    if verify:
        check.everything()
        if positions:
            _check_positions(path, arrays)
    doc_ids = DocIds.from_saved(path, saved_ids, arrays, n_docs)
    return arrays, params, analyzer, doc_ids, check


def _vocabulary_table(
    path: str | os.PathLike[str], arrays: dict[str, np.ndarray], *, build: bool, verify: bool
) -> None:
    """Build the vocabulary's hash table into ``arrays["vocab_slots"]`` (``build``: a version
    1 index), or check the saved one (``verify``) is the one a build gives.

    Raises
    ------
    IndexFormatError
        A term occurs twice, or the saved table is not the vocabulary's.
    """
    try:
        if build:
            arrays["vocab_slots"] = _core.vocab_slots(
                arrays["vocab_bytes"], arrays["vocab_offsets"]
            )
        elif verify:
            _core.check_vocab_slots(
                arrays["vocab_bytes"], arrays["vocab_offsets"], arrays["vocab_slots"]
            )
    except ValueError as exc:
        raise IndexFormatError(f"{path}: {exc}; rebuild the index") from None


def _check_arrays(
    path: str | os.PathLike[str],
    arrays: dict[str, np.ndarray],
    n_docs: int,
    index_arrays: dict[str, type[np.generic]],
) -> None:
    """Raise IndexFormatError unless the arrays form a consistent index of ``n_docs`` docs
    with the ``index_arrays`` of its version, all but the posting lists themselves
    (``PostingsCheck``: their cost grows with them) and the contents of ``vocab_slots``
    (``_vocabulary_table``)."""

    def fail(what: str) -> IndexFormatError:
        return IndexFormatError(f"{path}: {what}; the index is corrupt, rebuild it")

    ids = "doc_id_bytes" in arrays or "doc_id_offsets" in arrays
    check_saved_arrays(path, arrays, index_arrays, ids)
    n_terms = len(arrays["doc_freqs"])
    if n_docs < 1 or len(arrays["doc_lengths"]) != n_docs:
        raise fail(f"doc_lengths has {len(arrays['doc_lengths'])} entries for {n_docs} documents")
    delimited = [("vocab_offsets", "vocab_bytes"), ("posting_offsets", "postings")]
    if "positions" in index_arrays:
        delimited.append(("position_offsets", "positions"))
    for offsets, data in delimited:
        if not delimits(arrays[offsets], arrays[data], n_terms):
            raise fail(f"{offsets} does not delimit {data}")
    if np.any(arrays["doc_lengths"] < 0) or np.any(arrays["doc_freqs"] < 1):
        raise fail("negative document lengths or empty posting lists")


def _check_positions(path: str | os.PathLike[str], arrays: dict[str, np.ndarray]) -> None:
    """Raise IndexFormatError unless every term's positions run is well formed
    (``_phrase.check_positions``); the postings must be checked already."""
    bad = check_positions(
        arrays["posting_offsets"],
        arrays["postings"],
        arrays["position_offsets"],
        arrays["positions"],
    )
    if bad >= 0:
        raise IndexFormatError(
            f"{path}: the positions of term {bad} are malformed; the index is corrupt, rebuild it"
        )
