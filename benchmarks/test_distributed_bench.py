"""A sharded index on a local Ray cluster against one ``HybridIndex`` over the same SciFact
documents, one hybrid query per call (``distributed-scifact-1q``).

Sides: ``single`` (the reference, a ``HybridIndex`` in this process) and ``shards_1``,
``shards_2``, ``shards_4`` (``ShardedIndex`` with that many shard actors);
``shards_N_over_single`` is the time ratio, so the fan-out's cost (query encoding on the
coordinator, one Ray call per shard, the merge and the document fetch) is what it shows. 50
claims per round, ``num_threads=1`` in every leg. Corpus embeddings come from the embedding
cache on both sides, so neither pays the model for documents and both hold the same vectors.

Every side searches its dense leg exactly (``exact_threshold`` above the corpus size), so
every side's hits equal the single index's, searched one claim per call too (the int8 query
vector depends on its batch mates); the last round's answers are checked against them. A
timed run indexes the whole corpus (5,183 documents); under ``--benchmark-disable`` (the CI
smoke run) the first ``SMOKE_DOCS`` only, to keep the file under a minute or two there.

Needs Ray (the ``ray`` extra) and the prepared bi-encoder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bench_common import record_ratio

from hybrid_engine import ModelNotFoundError

QUERIES = 50
SMOKE_DOCS = 1_000
SHARDS = [1, 2, 4]
GROUP = "distributed-scifact-1q"
DENSE = {"exact_threshold": 10_000}
"""Exact dense search on every side (SciFact has 5,183 documents), so results are equal."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local Ray cluster for this module, shut down at its end."""
    import ray

    ray.init(
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=str(tmp_path_factory.mktemp("ray")),
    )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def data(request: pytest.FixtureRequest, shared_data: Path) -> dict[str, Any]:
    from hybrid_engine import EmbeddingCache, Encoder
    from hybrid_engine.evaluation import load_beir

    try:
        Encoder.load()
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
    dataset = load_beir(shared_data / "beir" / "scifact", split="test")
    timed = not request.config.getoption("benchmark_disable")
    corpus = dataset.corpus if timed else dataset.corpus[:SMOKE_DOCS]
    return {
        "corpus": corpus,
        "queries": list(dataset.queries.values())[:QUERIES],
        "cache": EmbeddingCache(),
    }


@pytest.fixture(scope="module")
def engines(
    cluster: Any, data: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """The single index and the sharded ones, by side; the sharded ones closed at the end."""
    from hybrid_engine import HybridIndex
    from hybrid_engine.distributed import ShardedIndex

    single = HybridIndex.build(data["corpus"], dense_options=DENSE, embedding_cache=data["cache"])
    out: dict[str, Any] = {"single": single}
    root = tmp_path_factory.mktemp("sharded")
    try:
        for n in SHARDS:
            out[f"shards_{n}"] = ShardedIndex.build(
                data["corpus"],
                root / f"n{n}",
                n_shards=n,
                build_options={"embedding_cache": True, "dense_options": DENSE},
            )
        yield out
    finally:
        for side, engine in out.items():
            if side != "single":
                engine.close()


@pytest.fixture(scope="module")
def expected(engines: dict[str, Any], data: dict[str, Any]) -> tuple[list, np.ndarray]:
    """The single index's top 10 ids and scores of every claim, one claim per call (the int8
    bi-encoder's query vector depends on its batch mates, so a batch would differ)."""
    found = [engines["single"].search([q], 10, num_threads=1) for q in data["queries"]]
    return [r.doc_ids[0] for r in found], np.concatenate([r.scores for r in found])


@pytest.mark.parametrize("side", ["single"] + [f"shards_{n}" for n in SHARDS])
def test_sharded_against_single(
    benchmark: Any,
    engines: dict[str, Any],
    data: dict[str, Any],
    expected: tuple[list, np.ndarray],
    side: str,
) -> None:
    engine, queries = engines[side], data["queries"]
    benchmark.group = GROUP
    found = benchmark.pedantic(
        lambda: [engine.search([q], 10, num_threads=1) for q in queries],
        rounds=5,
        iterations=1,
        warmup_rounds=1,
    )
    ids, scores = expected
    assert [r.doc_ids[0] for r in found] == ids
    np.testing.assert_array_equal(np.concatenate([r.scores for r in found]), scores)
    if side != "single":
        assert not any(r.missing_shards for r in found)
    benchmark.extra_info["queries_per_round"] = QUERIES
    benchmark.extra_info["documents"] = len(data["corpus"])
    record_ratio(benchmark, GROUP, side, reference="single")
