"""The dense numba kernels (exact re-scoring, scores of allowed rows, the graph-file check, the
links taken out of hnswlib's graph and the graph search over float32, int8 and binary codes)
run as plain Python (NUMBA_DISABLE_JIT=1) in a subprocess: the results equal the oracle and the
compiled run's, a masked search included, and the link checks accept a sound graph and refuse a
broken one (format 2's links, format 1's file)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from dense_oracle import knn

from hybrid_engine import DenseIndex

TESTS = Path(__file__).resolve().parent

SCRIPT = r"""
import sys
from pathlib import Path
import numba
import numpy as np
from numba.core import config
assert config.DISABLE_JIT, "NUMBA_DISABLE_JIT did not take effect"
from dense_oracle import knn
from test_dense_nojit import ALLOWED, QUERIES, VECTORS, build
from hybrid_engine import DenseIndex, IndexFormatError
from hybrid_engine.dense import _kernels as _dense_kernels
assert not isinstance(_dense_kernels.rescore, numba.core.registry.CPUDispatcher)
out = {}
for name, index in build().items():
    path = Path(sys.argv[2]) / name
    index.save(path)
    loaded = DenseIndex.load(path)
    exact = loaded.search(QUERIES, 7, exact=True)
    ids, scores = knn(VECTORS, QUERIES, 7, loaded.metric)
    np.testing.assert_array_equal(exact.ids, ids)
    np.testing.assert_array_equal(exact.scores, scores)
    out[f"{name}_ids"], out[f"{name}_scores"] = loaded.search(QUERIES, 7).ids, exact.scores
    masked = loaded.search(QUERIES, 7, allowed=ALLOWED)  # exact over the allowed rows
    ids, scores = knn(VECTORS[ALLOWED], QUERIES, 7, loaded.metric)
    np.testing.assert_array_equal(masked.ids, np.flatnonzero(ALLOWED)[ids])
    np.testing.assert_array_equal(masked.scores, scores)
    out[f"{name}_masked_ids"], out[f"{name}_masked_scores"] = masked.ids, masked.scores
    out[f"{name}_mapped_ids"] = DenseIndex.load(path, mmap=True).search(QUERIES, 7).ids
from index_dirs import as_dense_format_1, fix_checksums, rewrite
graph = Path(sys.argv[2]) / "graph"
upper = np.load(graph / "upper.npy")
row = int(np.flatnonzero(upper[:, 0] > 0)[-1])
upper[row, 1] = 10**6  # an upper-level link past the last node
old = Path(sys.argv[2]) / "graph-v1"
old.mkdir()
for file in graph.iterdir():
    (old / file.name).write_bytes(file.read_bytes())
as_dense_format_1(old)
data = bytearray((old / "graph.hnsw").read_bytes())
data[-4:] = (10**6).to_bytes(4, "little")  # the last upper-level link
(old / "graph.hnsw").write_bytes(bytes(data))
fix_checksums(old)
rewrite(graph, "upper", upper)
for broken, mmap in ((graph, False), (old, False), (old, True)):
    try:
        DenseIndex.load(broken, mmap=mmap)
    except IndexFormatError as exc:
        assert "malformed" in str(exc), exc
    else:
        raise AssertionError("a broken graph was loaded")
try:
    DenseIndex.load(graph, mmap=True).search(QUERIES, 7)
except IndexFormatError as exc:
    assert "malformed" in str(exc), exc
else:
    raise AssertionError("a broken graph was searched")
np.savez(sys.argv[1], **out)
"""

_rng = np.random.default_rng(7)
VECTORS = _rng.standard_normal((150, 12)).astype(np.float32)
QUERIES = _rng.standard_normal((9, 12)).astype(np.float32)
ALLOWED = _rng.random(150) < 0.3


def build() -> dict[str, DenseIndex]:
    graph = {"exact_threshold": 10, "num_threads": 1}
    return {
        "exact": DenseIndex.from_vectors(VECTORS, metric="ip"),
        "graph": DenseIndex.from_vectors(VECTORS, **graph),
        "int8": DenseIndex.from_vectors(VECTORS, quantization="int8", **graph),
        "binary": DenseIndex.from_vectors(VECTORS, quantization="binary", **graph),
    }


def test_kernels_without_jit_equal_oracle_and_jit(tmp_path) -> None:
    out = tmp_path / "nojit.npz"
    env = {
        **os.environ,
        "NUMBA_DISABLE_JIT": "1",
        "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out), str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    nojit = np.load(out)
    for name, index in build().items():
        exact = index.search(QUERIES, 7, exact=True)
        np.testing.assert_array_equal(exact.scores, knn(VECTORS, QUERIES, 7, index.metric)[1])
        np.testing.assert_array_equal(nojit[f"{name}_scores"], exact.scores)
        np.testing.assert_array_equal(nojit[f"{name}_ids"], index.search(QUERIES, 7).ids)
        np.testing.assert_array_equal(nojit[f"{name}_mapped_ids"], index.search(QUERIES, 7).ids)
        masked = index.search(QUERIES, 7, allowed=ALLOWED)
        np.testing.assert_array_equal(nojit[f"{name}_masked_ids"], masked.ids)
        np.testing.assert_array_equal(nojit[f"{name}_masked_scores"], masked.scores)
