"""The sides of the quantized dense comparison: one builder per index, each a ``Side`` that
searches one query per call at a setting (``ef``, ``oversample``), saves itself and loads
again, so ``benchmarks/reports/quant_report.py`` and ``benchmarks/test_dense_quant.py`` time
every side the same way on the same vectors.

Every graph is built with the engine's defaults (``hybrid_engine/dense/params.py``): M=16,
ef_construction=200, inner product over unit vectors. Builds use ``BUILD_THREADS`` threads,
searches one. Sides that search codes and rescore (``rescore``) fetch ``oversample x k``
candidates (the graph's ``ef`` at least that) and rescore them with the float32 vectors, in
numpy for the peers that have no rescoring of their own (faiss binary, usearch b1): those
vectors are counted apart, as ``rescore_bytes``, since they can stay on disk (memory-mapped).

Sides: ``hnswlib_f32``; ``faiss_hnsw_flat``; ``faiss_hnsw_sq8`` (``IndexHNSWSQ`` QT_8bit) and
``faiss_hnsw_sq8_refine`` (the same inside ``IndexRefineFlat``: a float32 copy in the index,
``k_factor`` = oversample); ``faiss_binary_hnsw`` (``IndexBinaryHNSW`` over sign bits, 48
bytes a vector) + numpy rescoring; ``usearch_i8``; ``usearch_b1`` (hamming over sign bits) +
numpy rescoring; and the engine's ``DenseIndex.from_vectors`` as ``ours_<quantization>``
(``ours_f32``, ``ours_int8``, ``ours_binary``).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

M = 16
EF_CONSTRUCTION = 200
BUILD_THREADS = 2

Setting = dict[str, int]
"""``{"ef": ...}`` or ``{"ef": ..., "oversample": ...}``."""

FLOAT_EFS = (32, 64, 128, 192, 256, 512)
RESCORE_SETTINGS = tuple(
    {"ef": ef, "oversample": os_} for ef, os_ in ((64, 2), (128, 2), (256, 2), (256, 4))
)
BINARY_SETTINGS = tuple(
    {"ef": ef, "oversample": os_}
    for ef, os_ in ((256, 4), (256, 8), (256, 16), (256, 20), (320, 32), (448, 45), (640, 64))
)
"""Sign bits of MiniLM vectors need many candidates: at 254k real vectors, oversample 16 gives
recall@10 0.94-0.95 and 32 gives 0.97 (docs/quantization.md), so the sweep goes to 64; 448/45
is the engine's default for binary codes (``dense.params.DEFAULT_EF_SEARCH``)."""


@dataclass
class Side:
    """One built index: ``search(query, k)`` gives the int64 ids of one unit query (1-d
    float32), best first, at the setting last given to ``apply``."""

    name: str
    settings: tuple[Setting, ...]
    apply: Callable[[Setting], None]
    search: Callable[[np.ndarray, int], np.ndarray]
    save: Callable[[Path], None]
    build_s: float = 0.0
    index_bytes: int = 0
    rescore_bytes: int = 0
    keep: list[Any] = field(default_factory=list)
    """Objects the closures need alive (faiss sub-indexes)."""
    saved: Path | None = None
    """Where ``build_sides(..., keep_dir=)`` left the saved index."""


def signs(vectors: np.ndarray) -> np.ndarray:
    """1 bit per dimension (``x > 0``), packed: uint8 ``(n, dim / 8)``."""
    return np.packbits(np.asarray(vectors) > 0, axis=-1)


def rescore(vectors: np.ndarray, query: np.ndarray, candidates: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` best of ``candidates`` (ids, -1 padding dropped) by exact inner product."""
    candidates = candidates[candidates >= 0]
    scores = np.asarray(vectors[np.sort(candidates)]) @ query
    order = np.argsort(-scores, kind="stable")[:k]
    return np.sort(candidates)[order]


def path_bytes(path: Path) -> int:
    """Bytes of a file, or of every file under a folder."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _measured(side: Side, folder: Path, keep: bool) -> Side:
    """``side`` with ``index_bytes`` from saving it as ``folder/<name>``, kept there when
    ``keep`` (``saved``), else removed."""
    target = folder / side.name
    side.save(target)
    side.index_bytes = path_bytes(target)
    if keep:
        side.saved = target
    else:
        remove(target)
    return side


def remove(path: Path) -> None:
    """Delete a saved index: a file or a folder."""
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


# -- peers: each wraps a built or loaded index ----------------------------------------------


def _float_settings() -> tuple[Setting, ...]:
    return tuple({"ef": ef} for ef in FLOAT_EFS)


def wrap_hnswlib(index: Any) -> Side:
    def search(query: np.ndarray, k: int) -> np.ndarray:
        return index.knn_query(query, k=k, num_threads=1)[0][0].astype(np.int64)

    return Side(
        "hnswlib_f32",
        _float_settings(),
        lambda s: index.set_ef(s["ef"]),
        search,
        lambda p: index.save_index(str(p)),
    )


def wrap_faiss(name: str, index: Any) -> Side:
    """``faiss_hnsw_flat`` or ``faiss_hnsw_sq8`` (an ``IndexHNSW*``)."""

    def apply(s: Setting) -> None:
        index.hnsw.efSearch = s["ef"]

    return Side(
        name,
        _float_settings(),
        apply,
        lambda q, k: index.search(q[None], k)[1][0],
        lambda p: _faiss().write_index(index, str(p)),
    )


def wrap_faiss_refine(refine: Any) -> Side:
    """``faiss_hnsw_sq8_refine``: ``IndexRefineFlat`` over an ``IndexHNSWSQ``."""
    base = _faiss().downcast_index(refine.base_index)

    def apply(s: Setting) -> None:
        base.hnsw.efSearch = s["ef"]  # faiss searches max(efSearch, k_factor * k)
        refine.k_factor = float(s["oversample"])

    return Side(
        "faiss_hnsw_sq8_refine",
        RESCORE_SETTINGS,
        apply,
        lambda q, k: refine.search(q[None], k)[1][0],
        lambda p: _faiss().write_index(refine, str(p)),
        keep=[base],
    )


def wrap_binary(name: str, index: Any, vectors: np.ndarray) -> Side:
    """``faiss_binary_hnsw`` or ``usearch_b1``: sign codes, ``oversample x k`` candidates by
    Hamming distance, rescored in numpy with ``vectors``."""
    setting: Setting = {}
    is_faiss = name.startswith("faiss")

    def apply(s: Setting) -> None:
        setting.update(s)
        if is_faiss:
            index.hnsw.efSearch = s["ef"]
        else:
            index.expansion_search = s["ef"]

    def search(query: np.ndarray, k: int) -> np.ndarray:
        wanted = k * setting["oversample"]
        if is_faiss:
            found = index.search(signs(query)[None], wanted)[1][0]
        else:
            found = index.search(signs(query), wanted, threads=1).keys.astype(np.int64)
        return rescore(vectors, query, found, k)

    def save(path: Path) -> None:
        if is_faiss:
            _faiss().write_index_binary(index, str(path))
        else:
            index.save(str(path))

    side = Side(name, BINARY_SETTINGS, apply, search, save)
    side.rescore_bytes = vectors.nbytes
    return side


def wrap_usearch_i8(index: Any) -> Side:
    def apply(s: Setting) -> None:
        index.expansion_search = s["ef"]

    return Side(
        "usearch_i8",
        _float_settings(),
        apply,
        lambda q, k: index.search(q, k, threads=1).keys.astype(np.int64),
        lambda p: index.save(str(p)),
    )


def _faiss() -> Any:
    import faiss

    return faiss


def _timed(build: Callable[[], Any]) -> tuple[Any, float]:
    """(what ``build`` returns, its seconds), with ``BUILD_THREADS`` OpenMP threads in faiss
    during the build and one after."""
    faiss = _faiss()
    faiss.omp_set_num_threads(BUILD_THREADS)
    start = time.perf_counter()
    try:
        return build(), time.perf_counter() - start
    finally:
        faiss.omp_set_num_threads(1)


def hnswlib_f32(vectors: np.ndarray) -> Side:
    import hnswlib

    def build() -> Any:
        index = hnswlib.Index("ip", vectors.shape[1])
        index.init_index(max_elements=len(vectors), M=M, ef_construction=EF_CONSTRUCTION)
        index.add_items(vectors, num_threads=BUILD_THREADS)
        return index

    index, seconds = _timed(build)
    side = wrap_hnswlib(index)
    side.build_s = seconds
    return side


def faiss_hnsw_flat(vectors: np.ndarray) -> Side:
    faiss = _faiss()

    def build() -> Any:
        index = faiss.IndexHNSWFlat(vectors.shape[1], M, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = EF_CONSTRUCTION
        index.add(vectors)
        return index

    index, seconds = _timed(build)
    side = wrap_faiss("faiss_hnsw_flat", index)
    side.build_s = seconds
    return side


def faiss_hnsw_sq8(vectors: np.ndarray) -> list[Side]:
    """``IndexHNSWSQ`` QT_8bit alone, and inside ``IndexRefineFlat`` (one build: the refine
    index adds each vector to both)."""
    faiss = _faiss()

    def build() -> Any:
        base = faiss.IndexHNSWSQ(
            vectors.shape[1], faiss.ScalarQuantizer.QT_8bit, M, faiss.METRIC_INNER_PRODUCT
        )
        base.hnsw.efConstruction = EF_CONSTRUCTION
        base.train(vectors)
        refine = faiss.IndexRefineFlat(base)
        refine.add(vectors)
        return base, refine

    (base, refine), seconds = _timed(build)
    sides = [wrap_faiss("faiss_hnsw_sq8", base), wrap_faiss_refine(refine)]
    for side in sides:
        side.build_s = seconds
        side.keep.extend([base, refine])
    return sides


def faiss_binary_hnsw(vectors: np.ndarray) -> Side:
    faiss = _faiss()

    def build() -> Any:
        index = faiss.IndexBinaryHNSW(vectors.shape[1], M)
        index.hnsw.efConstruction = EF_CONSTRUCTION
        index.add(signs(vectors))
        return index

    index, seconds = _timed(build)
    side = wrap_binary("faiss_binary_hnsw", index, vectors)
    side.build_s = seconds
    return side


def _usearch(vectors: np.ndarray, dtype: str) -> tuple[Any, float]:
    from usearch.index import Index

    binary = dtype == "b1"
    start = time.perf_counter()
    index = Index(
        ndim=vectors.shape[1],
        metric="hamming" if binary else "cos",
        dtype=dtype,
        connectivity=M,
        expansion_add=EF_CONSTRUCTION,
    )
    data = signs(vectors) if binary else vectors
    index.add(np.arange(len(vectors), dtype=np.uint64), data, threads=BUILD_THREADS)
    return index, time.perf_counter() - start


def usearch_i8(vectors: np.ndarray) -> Side:
    index, seconds = _usearch(vectors, "i8")
    side = wrap_usearch_i8(index)
    side.build_s = seconds
    return side


def usearch_b1(vectors: np.ndarray) -> Side:
    index, seconds = _usearch(vectors, "b1")
    side = wrap_binary("usearch_b1", index, vectors)
    side.build_s = seconds
    return side


def load_peer(name: str, path: Path, vectors: np.ndarray) -> Side:
    """A side saved by ``Side.save`` read back (for resident memory in a fresh process);
    ``vectors`` (a memmap is fine) serve the numpy rescoring of the binary sides."""
    if name == "hnswlib_f32":
        import hnswlib

        index = hnswlib.Index("ip", vectors.shape[1])
        index.load_index(str(path))
        return wrap_hnswlib(index)
    if name in ("faiss_hnsw_flat", "faiss_hnsw_sq8"):
        return wrap_faiss(name, _faiss().read_index(str(path)))
    if name == "faiss_hnsw_sq8_refine":
        return wrap_faiss_refine(_faiss().read_index(str(path)))
    if name == "faiss_binary_hnsw":
        return wrap_binary(name, _faiss().read_index_binary(str(path)), vectors)
    from usearch.index import Index

    index = Index.restore(str(path))
    return wrap_binary(name, index, vectors) if name == "usearch_b1" else wrap_usearch_i8(index)


# -- ours -------------------------------------------------------------------------------------


def wrap_ours(name: str, index: Any) -> Side:
    """A ``DenseIndex``: ``ef`` set through ``ef_search``, and ``oversample`` too."""

    def apply(s: Setting) -> None:
        index.ef_search = s["ef"]
        if "oversample" in s:
            index.oversample = s["oversample"]

    if name == "ours_f32":
        settings = _float_settings()
    else:
        settings = RESCORE_SETTINGS if name == "ours_int8" else BINARY_SETTINGS

    def search(query: np.ndarray, k: int) -> np.ndarray:
        return np.asarray(index.search(query, k, num_threads=1).ids[0], dtype=np.int64)

    return Side(name, settings, apply, search, lambda p: index.save(p))


def ours(vectors: np.ndarray, quantization: str | None) -> Side:
    """``DenseIndex.from_vectors(vectors, exact_threshold=0, quantization=...)``, at its
    default oversampling."""
    from hybrid_engine import DenseIndex

    start = time.perf_counter()
    index = DenseIndex.from_vectors(
        vectors, exact_threshold=0, num_threads=BUILD_THREADS, quantization=quantization
    )
    side = wrap_ours(f"ours_{quantization or 'f32'}", index)
    side.build_s = time.perf_counter() - start
    return side


def load_ours(name: str, path: Path) -> Side:
    """A saved ``DenseIndex`` read back with ``DenseIndex.load(path, mmap=True)``."""
    from hybrid_engine import DenseIndex

    return wrap_ours(name, DenseIndex.load(path, mmap=True))


# -- all --------------------------------------------------------------------------------------

PEERS: dict[str, Callable[[np.ndarray], Side | list[Side]]] = {
    "hnswlib_f32": hnswlib_f32,
    "faiss_hnsw_flat": faiss_hnsw_flat,
    "faiss_hnsw_sq8": faiss_hnsw_sq8,
    "faiss_binary_hnsw": faiss_binary_hnsw,
    "usearch_i8": usearch_i8,
    "usearch_b1": usearch_b1,
}
OURS = {"ours_f32": None, "ours_int8": "int8", "ours_binary": "binary"}
"""The engine's sides by name, to their quantization; ``ours`` names them all."""


def build_sides(
    vectors: np.ndarray, names: list[str] | None = None, keep_dir: Path | None = None
) -> list[Side]:
    """Every side (or those of ``names``: a key of ``PEERS`` or ``OURS``, or ``ours``) built over
    ``vectors`` (float32, unit rows), with ``index_bytes`` measured by saving each once (into
    ``keep_dir``, kept, when given)."""
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    sides: list[Side] = []
    with tempfile.TemporaryDirectory(prefix="dense-quant-") as tmp:
        folder = keep_dir or Path(tmp)
        for name in names or [*PEERS, "ours"]:
            if name == "ours":
                built: Side | list[Side] = [ours(vectors, q) for q in OURS.values()]
            elif name in OURS:
                built = ours(vectors, OURS[name])
            else:
                built = PEERS[name](vectors)
            for side in built if isinstance(built, list) else [built]:
                sides.append(_measured(side, folder, keep_dir is not None))
    return sides


def recall_at_k(found: np.ndarray, truth: np.ndarray) -> float:
    """Mean over queries of |found ∩ truth| / k (rows of ids)."""
    return float(
        np.mean([len(set(f.tolist()) & set(t.tolist())) / len(t) for f, t in zip(found, truth)])
    )


def run_setting(
    side: Side, setting: Setting, queries: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """(ids ``(n, k)``, seconds of each one-query call) of ``queries`` at ``setting``, after
    a warm-up of 10 queries."""
    side.apply(setting)
    for query in queries[:10]:
        side.search(query, k)
    ids = np.full((len(queries), k), -1, np.int64)
    seconds = np.empty(len(queries))
    for i, query in enumerate(queries):
        start = time.perf_counter()
        found = side.search(query, k)
        seconds[i] = time.perf_counter() - start
        ids[i, : len(found)] = found[:k]
    return ids, seconds
