"""The HNSW graph of a dense index: an hnswlib ``Index`` over inner products, labelled by
position, and its file, checked before hnswlib reads it."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path

import hnswlib
import numpy as np

from hybrid_engine.dense import _hnsw_kernels as kernels
from hybrid_engine.errors import IndexFormatError

# hnswlib 0.8 ``HierarchicalNSW::saveIndex`` header: offsetLevel0, max_elements,
# cur_element_count, size_data_per_element, label_offset, offsetData (size_t), maxlevel (int),
# enterpoint_node (uint32), maxM, maxM0, M (size_t), mult (double), ef_construction (size_t).
_HEADER = struct.Struct("<6QiI3QdQ")
HEADER_BYTES = _HEADER.size


def build(vectors: np.ndarray, m: int, ef_construction: int, num_threads: int) -> hnswlib.Index:
    """A graph over ``vectors`` (float32, ``(n, dim)``), labelled ``0..n-1``.

    hnswlib inserts with ``num_threads`` threads; with more than one the graph (not its
    validity) depends on thread timing.
    """
    graph = hnswlib.Index(space="ip", dim=vectors.shape[1])
    graph.init_index(max_elements=len(vectors), M=m, ef_construction=ef_construction)
    graph.add_items(vectors, np.arange(len(vectors)), num_threads=num_threads)
    return graph


def extend(graph: hnswlib.Index, vectors: np.ndarray, num_threads: int) -> None:
    """Insert ``vectors`` with the next labels, growing the capacity geometrically."""
    start = graph.element_count
    needed = start + len(vectors)
    if needed > graph.max_elements:
        graph.resize_index(max(needed, 2 * graph.max_elements))
    graph.add_items(vectors, np.arange(start, needed), num_threads=num_threads)


@dataclass(frozen=True)
class GraphFile:
    """An hnswlib graph file whose header matches its index (``header``): what its body holds.

    ``level0_words``, ``data_word``, ``label_word``: a level-0 record's size and the word
    offsets of its vector and label; ``max_m0``, ``max_m``: the most links at level 0 and
    above; ``max_level``, ``entry_point``: the top level and where searches start.
    """

    file: Path
    shown_as: Path
    n: int
    dim: int
    level0_words: int
    data_word: int
    label_word: int
    max_m0: int
    max_m: int
    max_level: int
    entry_point: int

    def error(self, what: str) -> IndexFormatError:
        """The error for a fault of this file, naming ``shown_as``."""
        return IndexFormatError(f"{self.shown_as}: {what}; the index is corrupt, rebuild it")

    def element_error(self, bad: int, parts: str, whole: str) -> IndexFormatError:
        """The error for the fault ``bad`` that a check of the body found (``_hnsw_kernels``):
        the ``parts`` of element ``bad`` malformed, or, where ``bad`` is ``n`` (a fault of the
        body as a whole), ``whole``."""
        return self.error(f"the {parts} of element {bad} are malformed" if bad < self.n else whole)

    def body(self) -> np.ndarray:
        """The body (after the header) memory-mapped read-only as uint32 words."""
        return np.memmap(self.file, dtype=np.uint32, mode="r", offset=_HEADER.size)


def read_header(
    file: Path, n: int, dim: int, m: int, ef_construction: int, *, shown_as: Path | None = None
) -> GraphFile:
    """The header of a graph saved by ``hnswlib.Index.save_index`` for ``n`` vectors of
    ``dim``, checked against the index's parameters (a constant amount of work). Error
    messages name ``shown_as`` (``file`` when None): the path the user gave, when ``file`` is
    the one ``storage.open_index_dir`` yielded.

    Raises
    ------
    IndexFormatError
        The header does not describe such a graph, or the file is too small for its level-0
        records.
    """
    shown = shown_as or file

    def fail(what: str) -> IndexFormatError:
        return IndexFormatError(f"{shown}: {what}; the index is corrupt, rebuild it")

    size = file.stat().st_size
    if size <= _HEADER.size or (size - _HEADER.size) % 4:
        raise fail(f"a graph file of {size} bytes cannot hold an hnswlib graph")
    with open(file, "rb") as f:
        header = _HEADER.unpack(f.read(_HEADER.size))
    offset0, capacity, count, record, label_at, data_at, max_level, entry = header[:8]
    max_m, max_m0, got_m, mult, got_ef_construction = header[8:]
    links0 = 4 + 4 * 2 * m
    if count != n:
        raise fail(f"the graph holds {count} vectors, the index {n}")
    expected = (0, links0 + 4 * dim + 8, links0 + 4 * dim, links0, m, 2 * m, m, ef_construction)
    found = (offset0, record, label_at, data_at, max_m, max_m0, got_m, got_ef_construction)
    if found != expected or capacity < count or not 0 <= max_level < 64:
        raise fail(
            f"its header {header} does not describe a graph of {dim}-dimensional vectors with "
            f"M={m}, ef_construction={ef_construction}"
        )
    if not math.isclose(mult, 1 / math.log(m), rel_tol=1e-12):
        raise fail(f"its level multiplier {mult} is not 1/ln(M) for M={m}")
    # The level-0 records and one size word per element must fit; upper_starts checks the rest.
    if entry >= n or size - _HEADER.size < n * (record + 4):
        raise fail(
            f"its size, levels or entry point are inconsistent (entry point {entry}, {size} bytes)"
        )
    return GraphFile(
        file, shown, n, dim, record // 4, data_at // 4, label_at // 4, max_m0, max_m, max_level,
        entry,
    )  # fmt: skip


def check_body(graph_file: GraphFile) -> None:
    """Check every link, level and label of the body of ``graph_file`` (``read_header``)
    (``_hnsw_kernels.check_hnsw_body``): hnswlib, and the links taken out of its file, trust it.

    Raises
    ------
    IndexFormatError
        The body does not hold such a graph.
    """
    g = graph_file
    words = g.body()
    bad = kernels.check_hnsw_body(
        words, g.n, g.level0_words, g.max_m0, g.max_m, g.max_level, g.entry_point, g.label_word
    )
    del words
    if bad >= 0:
        raise g.element_error(
            bad, "links or label", "its size, levels or entry point are inconsistent"
        )


def load(graph_file: GraphFile) -> hnswlib.Index:
    """Read the graph of ``graph_file`` (``read_header``) into hnswlib, its body checked first
    (``check_body``).

    Raises
    ------
    IndexFormatError
        The body does not hold such a graph.
    """
    g = graph_file
    check_body(g)
    graph = hnswlib.Index(space="ip", dim=g.dim)
    try:
        graph.load_index(str(g.file), max_elements=g.n)
    except RuntimeError as exc:  # hnswlib's own checks, should ours ever miss something
        raise g.error(f"hnswlib cannot read it ({exc})") from None
    if graph.element_count != g.n:
        raise g.error(f"hnswlib read {graph.element_count} vectors, the index has {g.n}")
    return graph
