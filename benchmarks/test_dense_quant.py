"""Quantized dense search against its peers, on the same vectors in the same run.

Every side of ``dense_peers.py`` (hnswlib float32; faiss ``IndexHNSWFlat``, ``IndexHNSWSQ``
QT_8bit alone and inside ``IndexRefineFlat``, ``IndexBinaryHNSW`` + numpy rescoring; usearch
i8, and b1 + numpy rescoring; the engine's ``DenseIndex.from_vectors`` as ``ours_f32``,
``ours_int8`` and ``ours_binary``) is built with M=16, ef_construction=200 over:

* ``dense-quant-5k-1q-k10``: 5,000 clustered synthetic unit vectors of 384 dimensions
  (``bench_common.clustered_vectors``), 100 queries of the same mixture: small enough for CI's
  smoke run;
* ``dense-quant-254k-1q-k10`` (``scale``): the 253,928 real scale vectors and 1,000 MS MARCO
  query vectors cached by ``benchmarks/reports/embed_scale.py --docs all`` (skipped, naming that
  command, when absent).

The timed body is one ``search`` call per query, one thread, at the side's middle setting (for
the float and int8 graphs ef 128; for rescoring sides ``ef`` 256 with their middle
``oversample``). ``extra_info`` holds that setting, recall@10 against the exact float32 top-10,
p50/p95 per call, build seconds and index bytes per document, and ``settings``: the same
figures at every setting of the side, to read comparisons at equal recall off. The ratio
``<side>_over_hnswlib_f32`` is the median time of a side over hnswlib's: below 1, the side is
faster. ``benchmarks/reports/quant_report.py`` prints the full sweep as JSON, with resident memory.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bench_common import clustered_vectors, record_ratio

sys.path.insert(0, str(Path(__file__).resolve().parent / "reports"))

K = 10
DIM = 384
SIDES = [
    "hnswlib_f32",
    "faiss_hnsw_flat",
    "faiss_hnsw_sq8",
    "faiss_hnsw_sq8_refine",
    "faiss_binary_hnsw",
    "usearch_i8",
    "usearch_b1",
    "ours_f32",
    "ours_int8",
    "ours_binary",
]
BUILDER = {"faiss_hnsw_sq8_refine": "faiss_hnsw_sq8"}
"""The ``dense_peers.build_sides`` name that builds each side (others: their own name)."""
_BUILT: dict[tuple[str, str], dict[str, Any]] = {}


def _peers() -> Any:
    pytest.importorskip("faiss", reason="faiss-cpu (the bench extra) is a peer here")
    pytest.importorskip("usearch", reason="usearch (the bench extra) is a peer here")
    import dense_peers

    return dense_peers


def _side(size: str, name: str, vectors: np.ndarray) -> Any:
    """The built side ``name`` over ``vectors`` (built once per size and builder)."""
    peers = _peers()
    builder = BUILDER.get(name, name)
    if (size, builder) not in _BUILT:
        sides = peers.build_sides(vectors, [builder])
        _BUILT[(size, builder)] = {side.name: side for side in sides}
    return _BUILT[(size, builder)][name]


def _truth(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Exact float32 top-``K`` rows of each query by inner product (chunked)."""
    import scale_corpus

    return scale_corpus.exact_top_k(scale_corpus.in_chunks(vectors), queries, K)[0]


def _bench(benchmark: Any, name: str, size: str, data: tuple[np.ndarray, ...]) -> None:
    peers = _peers()
    vectors, queries, truth = data
    side = _side(size, name, vectors)
    group = f"dense-quant-{size}-1q-k{K}"
    benchmark.group = group
    sweep = []
    for setting in side.settings:
        ids, seconds = peers.run_setting(side, setting, queries, K)
        sweep.append(
            {
                **setting,
                "recall_at_10": peers.recall_at_k(ids, truth),
                "p50_ms": 1e3 * float(np.percentile(seconds, 50)),
                "p95_ms": 1e3 * float(np.percentile(seconds, 95)),
            }
        )
    middle = side.settings[len(side.settings) // 2]
    side.apply(middle)

    def run() -> None:
        for query in queries:
            side.search(query, K)

    benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    at_middle = sweep[len(sweep) // 2]
    benchmark.extra_info.update(
        {
            "setting": middle,
            "recall_at_10": at_middle["recall_at_10"],
            "p50_ms": at_middle["p50_ms"],
            "p95_ms": at_middle["p95_ms"],
            "build_s": side.build_s,
            "index_bytes_per_doc": side.index_bytes / len(vectors),
            "rescore_bytes_per_doc": side.rescore_bytes / len(vectors),
            "queries_per_call": 1,
            "settings": sweep,
        }
    )
    assert 0.0 <= at_middle["recall_at_10"] <= 1.0
    record_ratio(benchmark, group, name, reference="hnswlib_f32")


@pytest.fixture(scope="module")
def small() -> tuple[np.ndarray, ...]:
    """5,000 clustered vectors, 100 queries, their exact top-10."""
    vectors, queries = clustered_vectors(5000, DIM, seed=0), clustered_vectors(100, DIM, seed=1)
    return vectors, queries, _truth(vectors, queries)


@pytest.fixture(scope="module")
def scale() -> tuple[np.ndarray, ...]:
    """The 253,928 cached scale vectors (in memory), 1,000 sampled MS MARCO queries, their
    exact top-10."""
    import scale_corpus

    try:
        vectors = np.ascontiguousarray(scale_corpus.real_vectors())
        all_queries = scale_corpus.query_vectors()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))
    queries = np.ascontiguousarray(all_queries[scale_corpus.query_sample(len(all_queries))])
    return vectors, queries, _truth(vectors, queries)


@pytest.mark.parametrize("name", SIDES)
def test_quant_5k(benchmark, name, small):
    _bench(benchmark, name, "5k", small)


@pytest.mark.scale
@pytest.mark.parametrize("name", SIDES)
def test_quant_254k(benchmark, name, scale):
    _bench(benchmark, name, "254k", scale)
