"""A dense index on disk: ``vectors.npy``, the ids (when given), the HNSW graph (``graph.hnsw``,
hnswlib's format) when there is one, and a manifest with every parameter and the encoder's
``model_hash`` (``storage.write_index_dir``)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.checks import check_int
from hybrid_engine.corpus import DocIds
from hybrid_engine.dense import hnsw as _hnsw
from hybrid_engine.dense.mapped_graph import Graph, MappedGraph
from hybrid_engine.dense.params import DenseParams
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.storage import open_index_dir, read_index_dir, write_index_dir

FORMAT = "hybrid_engine.dense"
FORMAT_VERSION = 1
GRAPH_FILE = "graph.hnsw"
PARAM_NAMES = {"metric", "dim", "m", "ef_construction", "ef_search", "exact_threshold"}


@dataclass(frozen=True)
class SavedDense:
    """What ``read_dense`` read, checked."""

    vectors: np.ndarray
    doc_ids: DocIds
    params: DenseParams
    ef_search: int
    model_hash: str | None
    graph: Graph | None


def write_dense(
    path: str | os.PathLike[str],
    vectors: np.ndarray,
    doc_ids: DocIds,
    params: DenseParams,
    ef_search: int,
    model_hash: str | None,
    graph: Graph | None,
) -> None:
    """Write a dense index to directory ``path`` atomically."""
    arrays = {"vectors": vectors, **doc_ids.arrays()}
    metadata: dict[str, Any] = {
        "params": {
            "metric": params.metric,
            "dim": vectors.shape[1],
            "m": params.m,
            "ef_construction": params.ef_construction,
            "ef_search": ef_search,
            "exact_threshold": params.exact_threshold,
        },
        "stats": {"num_documents": len(doc_ids)},
        "doc_ids": doc_ids.mode,
        "encoder_model_hash": model_hash,
    }
    components = {GRAPH_FILE: lambda file: graph.save_index(str(file))} if graph else {}
    write_index_dir(path, FORMAT, FORMAT_VERSION, metadata, arrays, components)


def read_dense(path: str | os.PathLike[str], *, mmap: bool, verify: bool) -> SavedDense:
    """Read and check a directory written by ``write_dense`` (see ``DenseIndex.load``).

    Raises
    ------
    IndexFormatError
        The directory is missing, truncated, corrupt, or not a dense index of this format.
    """
    with open_index_dir(path) as root:  # the graph from the save the manifest comes from
        manifest, arrays = read_index_dir(
            root,
            FORMAT,
            FORMAT_VERSION,
            mmap=mmap,
            verify=verify,
            components=(GRAPH_FILE,),
            verify_components=verify or not mmap,
            shown_as=path,
        )
        return _checked(path, root, manifest, arrays, mapped=mmap and not verify)


def _checked(
    path: str | os.PathLike[str],
    root: Path,
    manifest: dict[str, Any],
    arrays: dict[str, np.ndarray],
    *,
    mapped: bool,
) -> SavedDense:
    """The read index of ``path`` (pinned at ``root``), checked; its graph loaded into hnswlib
    (checked in full), or with ``mapped`` memory-mapped (its header checked, the rest at use:
    ``MappedGraph``)."""
    try:
        saved = manifest["params"]
        # Every parameter must be recorded: a missing one would silently take its default.
        if not isinstance(saved, dict) or set(saved) != PARAM_NAMES:
            raise ValueError(f"params {saved!r} must set exactly {sorted(PARAM_NAMES)}")
        params = DenseParams(
            saved["metric"], saved["m"], saved["ef_construction"], saved["exact_threshold"]
        )
        dim = check_int("dim", saved["dim"], 1)
        ef_search = check_int("ef_search", saved["ef_search"], 1)
        n_docs = check_int("num_documents", manifest["stats"]["num_documents"], 1)
        saved_ids = manifest["doc_ids"]
        model_hash = manifest["encoder_model_hash"]
        if model_hash is not None and not isinstance(model_hash, str):
            raise ValueError(f"encoder_model_hash is {model_hash!r}, not a str or null")
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(f"{path}: bad manifest entry ({exc}); rebuild the index") from None
    _check_arrays(path, arrays, n_docs, dim, "doc_id_bytes" in arrays)
    doc_ids = DocIds.from_saved(path, saved_ids, arrays, n_docs)
    graph: Graph | None = None
    if GRAPH_FILE in manifest["files"]:
        graph_file = _hnsw.read_header(
            root / GRAPH_FILE,
            n_docs,
            dim,
            params.m,
            params.ef_construction,
            shown_as=Path(path) / GRAPH_FILE,
        )
        graph = MappedGraph(graph_file) if mapped else _hnsw.load(graph_file)
    return SavedDense(arrays["vectors"], doc_ids, params, ef_search, model_hash, graph)


def _check_arrays(
    path: str | os.PathLike[str],
    arrays: dict[str, np.ndarray],
    n_docs: int,
    dim: int,
    explicit: bool,
) -> None:
    """Raise IndexFormatError unless the arrays form an index of ``n_docs`` vectors of ``dim``."""

    def fail(what: str) -> IndexFormatError:
        return IndexFormatError(f"{path}: {what}; the index is corrupt, rebuild it")

    expected = {"vectors", "doc_id_bytes", "doc_id_offsets"} if explicit else {"vectors"}
    if set(arrays) != expected:
        raise fail(f"expected arrays {sorted(expected)}, found {sorted(arrays)}")
    vectors = arrays["vectors"]
    if vectors.dtype != np.float32 or vectors.shape != (n_docs, dim):
        raise fail(
            f"vectors is {vectors.dtype} of shape {vectors.shape}, expected float32 of shape "
            f"{(n_docs, dim)}"
        )
