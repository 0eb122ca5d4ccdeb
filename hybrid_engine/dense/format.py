"""A dense index on disk (``storage.write_index_dir``): ``vectors.npy`` (float32), the ids (when
given), and a manifest with every parameter and the encoder's ``model_hash``; with a graph, its
links (``links0.npy``, ``upper.npy``, ``upper_start.npy``: ``links.LinkGraph``, no copy of the
vectors) and, quantized, the codes (``codes.npy``, ``code_first.npy``, ``code_second.npy``:
``quantization.Codes``).

Format 1 (still read) held the graph as hnswlib's file ``graph.hnsw``, a copy of every vector
among it; a load takes its links out (a pass over the file, checked in full first), and the
next ``save`` writes format 2.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.checks import check_int
from hybrid_engine.corpus import DocIds
from hybrid_engine.dense import hnsw as _hnsw
from hybrid_engine.dense.links import ARRAY_NAMES as LINK_ARRAYS
from hybrid_engine.dense.links import LinkGraph
from hybrid_engine.dense.params import DenseParams
from hybrid_engine.dense.quantization import Codes
from hybrid_engine.dense.vector_file import VectorFile
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.storage import (
    in_memory_except,
    open_index_dir,
    read_index_dir,
    write_index_dir,
)

FORMAT = "hybrid_engine.dense"
FORMAT_VERSION = 2
OLDER_VERSIONS = (1,)
"""The versions before ``FORMAT_VERSION`` that ``read_dense`` reads too."""
GRAPH_FILE = "graph.hnsw"
"""Format 1's graph: hnswlib's file."""
V1_PARAM_NAMES = {"metric", "dim", "m", "ef_construction", "ef_search", "exact_threshold"}
PARAM_NAMES = V1_PARAM_NAMES | {"quantization", "oversample"}
CODE_ARRAYS = ("codes", "code_first", "code_second")


@dataclass(frozen=True)
class SavedDense:
    """What ``read_dense`` read, checked."""

    vectors: np.ndarray
    doc_ids: DocIds
    params: DenseParams
    ef_search: int
    model_hash: str | None
    graph: LinkGraph | None
    file: VectorFile | None


def write_dense(
    path: str | os.PathLike[str],
    vectors: np.ndarray,
    doc_ids: DocIds,
    params: DenseParams,
    ef_search: int,
    model_hash: str | None,
    graph: LinkGraph | None,
) -> None:
    """Write a dense index to directory ``path`` atomically."""
    arrays = {"vectors": vectors, **doc_ids.arrays()}
    layout = None
    if graph is not None:
        arrays.update(graph.arrays)
        codes = graph.codes
        if codes.kind is not None:
            arrays.update(codes=codes.data, code_first=codes.first, code_second=codes.second)
        layout = {"entry_point": graph.entry_point, "max_level": graph.max_level}
    metadata: dict[str, Any] = {
        "params": {
            "metric": params.metric,
            "dim": vectors.shape[1],
            "m": params.m,
            "ef_construction": params.ef_construction,
            "ef_search": ef_search,
            "exact_threshold": params.exact_threshold,
            "quantization": params.quantization,
            "oversample": params.oversample,
        },
        "stats": {"num_documents": len(doc_ids)},
        "doc_ids": doc_ids.mode,
        "encoder_model_hash": model_hash,
        "graph": layout,
    }
    write_index_dir(path, FORMAT, FORMAT_VERSION, metadata, arrays)


def read_dense(path: str | os.PathLike[str], *, mmap: bool | str, verify: bool) -> SavedDense:
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
            mmap=bool(mmap),
            verify=verify,
            components=(GRAPH_FILE,),
            shown_as=path,
            older_versions=OLDER_VERSIONS,
        )
        if mmap == "cold":  # only the vectors a quantized graph rescores with stay mapped
            quantized = _quantized_graph(manifest)
            arrays = in_memory_except(arrays, lambda name: quantized and name == "vectors")
        saved = _checked(path, root, manifest, arrays, check_links=verify or mmap is not True)
        vectors = saved.vectors
        if isinstance(vectors, np.memmap) and mmap == "cold":
            shape = (vectors.shape[0], vectors.shape[1])
            file = VectorFile(
                root / "vectors.npy", vectors.offset, shape, Path(path) / "vectors.npy"
            )
            saved = dataclasses.replace(saved, file=file)
        return saved


def _quantized_graph(manifest: dict[str, Any]) -> bool:
    """Whether the manifest describes a graph walked on codes: its float32 vectors only
    rescore candidates (read by position: ``VectorFile``)."""
    params = manifest.get("params")
    return bool(manifest.get("graph") and isinstance(params, dict) and params.get("quantization"))


def _checked(
    path: str | os.PathLike[str],
    root: Path,
    manifest: dict[str, Any],
    arrays: dict[str, np.ndarray],
    *,
    check_links: bool,
) -> SavedDense:
    """The read index of ``path`` (pinned at ``root``), checked; its graph's links checked in
    full with ``check_links``, else by each search as it reads them. A format 1 graph file is
    checked in full and its links taken out (``LinkGraph.from_file``)."""
    version = manifest["format_version"]
    try:
        saved = manifest["params"]
        names = PARAM_NAMES if version == FORMAT_VERSION else V1_PARAM_NAMES
        # Every parameter must be recorded: a missing one would silently take its default.
        if not isinstance(saved, dict) or set(saved) != names:
            raise ValueError(f"params {saved!r} must set exactly {sorted(names)}")
        params = DenseParams(
            saved["metric"],
            saved["m"],
            saved["ef_construction"],
            saved["exact_threshold"],
            saved.get("quantization"),
            saved.get("oversample"),
        )
        dim = check_int("dim", saved["dim"], 1)
        ef_search = check_int("ef_search", saved["ef_search"], 1)
        n_docs = check_int("num_documents", manifest["stats"]["num_documents"], 1)
        saved_ids = manifest["doc_ids"]
        model_hash = manifest["encoder_model_hash"]
        if model_hash is not None and not isinstance(model_hash, str):
            raise ValueError(f"encoder_model_hash is {model_hash!r}, not a str or null")
        layout = manifest["graph"] if version == FORMAT_VERSION else None
        if layout is not None:
            entry_point = check_int("entry_point", layout["entry_point"], 0)
            max_level = check_int("max_level", layout["max_level"], 0, 63)
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(f"{path}: bad manifest entry ({exc}); rebuild the index") from None
    explicit = "doc_id_bytes" in arrays
    expected = {"vectors", "doc_id_bytes", "doc_id_offsets"} if explicit else {"vectors"}
    if layout is not None:
        expected.update(LINK_ARRAYS)
        if params.quantization is not None:
            expected.update(CODE_ARRAYS)
    _check_arrays(path, arrays, n_docs, dim, expected)
    doc_ids = DocIds.from_saved(path, saved_ids, arrays, n_docs)
    vectors = arrays["vectors"]
    graph: LinkGraph | None = None
    if layout is not None:
        codes = _codes(path, params.quantization, arrays, n_docs, dim)
        widths = (arrays["links0"].shape[1:], arrays["upper"].shape[1:])
        if widths != ((1 + 2 * params.m,), (1 + params.m,)):
            raise IndexFormatError(
                f"{path}: its links have widths {widths}, not those of m={params.m}; the index "
                "is corrupt, rebuild it"
            )
        graph = LinkGraph(
            arrays["links0"], arrays["upper"], arrays["upper_start"], max_level, entry_point,
            Codes.of_vectors(vectors) if codes is None else codes,
            shown_as=Path(path) / "links0.npy",
        )  # fmt: skip
        if check_links:
            graph.check()
    elif GRAPH_FILE in manifest["files"]:
        graph_file = _hnsw.read_header(
            root / GRAPH_FILE,
            n_docs,
            dim,
            params.m,
            params.ef_construction,
            shown_as=Path(path) / GRAPH_FILE,
        )
        graph = LinkGraph.from_file(graph_file, Codes.of_vectors(vectors))
    return SavedDense(vectors, doc_ids, params, ef_search, model_hash, graph, None)


def _codes(
    path: str | os.PathLike[str],
    kind: str | None,
    arrays: dict[str, np.ndarray],
    n_docs: int,
    dim: int,
) -> Codes | None:
    """The saved codes of ``kind`` (None for float32), their shapes checked."""
    if kind is None:
        return None
    data, first, second = (arrays[name] for name in CODE_ARRAYS)
    shapes: tuple[tuple[type[np.generic], tuple[int, ...]], ...]
    if kind == "int8":
        shapes = ((np.int8, (n_docs, dim)), (np.float32, (dim,)), (np.float32, (dim,)))
    else:
        words = -(-dim // 64)
        shapes = ((np.uint64, (n_docs, words)), (np.float32, (dim,)), (np.float32, (n_docs,)))
    for name, array, (dtype, shape) in zip(CODE_ARRAYS, (data, first, second), shapes, strict=True):
        if array.dtype != dtype or array.shape != shape:
            raise IndexFormatError(
                f"{path}: {name} is {array.dtype} of shape {array.shape}, expected "
                f"{np.dtype(dtype)} of shape {shape} for {kind} codes; the index is corrupt, "
                "rebuild it"
            )
    return Codes(kind, data, first, second)


def _check_arrays(
    path: str | os.PathLike[str],
    arrays: dict[str, np.ndarray],
    n_docs: int,
    dim: int,
    expected: set[str],
) -> None:
    """Raise IndexFormatError unless the arrays are ``expected`` and hold ``n_docs`` vectors of
    ``dim``."""

    def fail(what: str) -> IndexFormatError:
        return IndexFormatError(f"{path}: {what}; the index is corrupt, rebuild it")

    if set(arrays) != expected:
        raise fail(f"expected arrays {sorted(expected)}, found {sorted(arrays)}")
    vectors = arrays["vectors"]
    if vectors.dtype != np.float32 or vectors.shape != (n_docs, dim):
        raise fail(
            f"vectors is {vectors.dtype} of shape {vectors.shape}, expected float32 of shape "
            f"{(n_docs, dim)}"
        )
