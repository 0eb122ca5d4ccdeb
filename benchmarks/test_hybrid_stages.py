"""Per-stage cost of one hybrid query on SciFact (5,183 documents), from query text.

Each benchmark runs one stage for 50 SciFact claims, one query per call, as the hybrid
``HybridIndex.search`` does: BM25 top 100, dense query encoding (fp32 and int8), dense HNSW top
100 from the query vector, DBSF fusion of the two lists, MMR over the fused top 30, and the whole
``HybridIndex.search``; for the third leg, SPLADE query encoding and the SPLADE top 100 from
the query vector (its index encodes the corpus once, minutes on 2 cores). There is no peer: the
figures are the stages' shares of the budget (median round time / 50 per query). Needs the
prepared models; corpus embeddings come from the embedding cache.
"""

from __future__ import annotations

from typing import Any

import pytest

from hybrid_engine import ModelNotFoundError

QUERIES = 50


@pytest.fixture(scope="module")
def stages(shared_data: Any, scifact_queries: list[str]) -> dict[str, Any]:
    from hybrid_engine import EmbeddingCache, Encoder, HybridIndex, fuse
    from hybrid_engine.evaluation import load_beir

    try:
        encoder = Encoder.load()
        int8 = Encoder.load(variant="int8")
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
    corpus = load_beir(shared_data / "beir" / "scifact").corpus
    engine = HybridIndex.build(corpus, encoder=encoder, embedding_cache=EmbeddingCache())
    queries = scifact_queries[:QUERIES]
    vectors = encoder.encode(queries)
    legs = [
        (engine.bm25.search([q], 100, num_threads=1), engine.dense.search(v, 100, num_threads=1))
        for q, v in zip(queries, vectors)
    ]
    fused = [fuse(list(pair), 30) for pair in legs]
    return {
        "engine": engine,
        "encoder": encoder,
        "int8": int8,
        "queries": queries,
        "vectors": vectors,
        "legs": legs,
        "fused": fused,
    }


def _run(benchmark: Any, name: str, fn: Any) -> None:
    benchmark.group = "hybrid-stages-scifact-1q"
    benchmark.name = name
    benchmark.extra_info["queries_per_round"] = QUERIES
    benchmark.pedantic(fn, rounds=5, iterations=1, warmup_rounds=1)


def test_bm25_top100(benchmark, stages):
    engine, queries = stages["engine"], stages["queries"]
    _run(benchmark, "bm25", lambda: [engine.bm25.search([q], 100, num_threads=1) for q in queries])


@pytest.mark.parametrize("variant", ["encoder", "int8"])
def test_query_encoding(benchmark, stages, variant):
    encoder, queries = stages[variant], stages["queries"]
    _run(benchmark, f"encode_{variant}", lambda: [encoder.encode([q]) for q in queries])


def test_dense_hnsw_top100(benchmark, stages):
    dense, vectors = stages["engine"].dense, stages["vectors"]
    _run(benchmark, "hnsw", lambda: [dense.search(v, 100, num_threads=1) for v in vectors])


def test_fusion(benchmark, stages):
    from hybrid_engine import fuse

    legs = stages["legs"]
    _run(benchmark, "fusion", lambda: [fuse(list(pair), 10) for pair in legs])


def test_mmr(benchmark, stages):
    from hybrid_engine import mmr

    dense, vectors, fused = stages["engine"].dense, stages["vectors"], stages["fused"]
    _run(
        benchmark,
        "mmr",
        lambda: [mmr(f, v[None], dense.vectors, 10) for f, v in zip(fused, vectors)],
    )


def test_whole_search(benchmark, stages):
    engine, queries = stages["engine"], stages["queries"]
    _run(benchmark, "hybrid_search", lambda: [engine.search([q], 10) for q in queries])


@pytest.fixture(scope="module")
def splade_stages(shared_data: Any, scifact_queries: list[str]) -> dict[str, Any]:
    from hybrid_engine import SpladeEncoder, SpladeIndex
    from hybrid_engine.evaluation import load_beir

    try:
        encoder = SpladeEncoder.load()
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
    corpus = load_beir(shared_data / "beir" / "scifact").corpus
    index = SpladeIndex.build(corpus, encoder=encoder)
    queries = scifact_queries[:QUERIES]
    return {
        "index": index,
        "encoder": encoder,
        "queries": queries,
        "vectors": [encoder.encode([q]) for q in queries],
    }


def test_splade_query_encoding(benchmark, splade_stages):
    encoder, queries = splade_stages["encoder"], splade_stages["queries"]
    _run(benchmark, "encode_splade", lambda: [encoder.encode([q]) for q in queries])


def test_splade_top100(benchmark, splade_stages):
    index, vectors = splade_stages["index"], splade_stages["vectors"]
    _run(benchmark, "splade", lambda: [index.search(v, 100, num_threads=1) for v in vectors])
