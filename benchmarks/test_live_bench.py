"""The live engine's costs on SciFact (5,183 documents), each against its reference in the
same run.

* ``live-add-scifact``: indexing the corpus as a fresh ``HybridIndex.build`` (``fresh``), or
  as a live engine built from a fifth of it that ``add``s and ``commit``s the rest in four
  batches (``live``); ``live_over_fresh`` is the time ratio (the acceptance: documents/s of
  the live path >= 0.8x the fresh build's, i.e. the ratio <= 1.25). Corpus embeddings come from
  the embedding cache on both sides, so the ratio is the indexing work, not the model's.
* ``live-segments-scifact-1q``: one hybrid query per call on that five-segment engine after
  10% of its documents are deleted (``segments``), against an engine freshly built over the
  same live documents (``merged``); ``segments_over_merged`` (acceptance: <= 1.3).
* ``live-merged-scifact-1q``: the merged engine's ``search`` against the stages the engine
  ran before it was live, called by hand on its one segment's legs (``legs``: BM25 top 100,
  query encoding, dense top 100, DBSF); ``engine_over_legs`` (acceptance: no slower, ~1).
* ``filter-bm25-scifact-{percent}-1q``: BM25 top 10 under a metadata filter of that
  selectivity (``ours``: the mask inside the kernel) against bm25s's ``weight_mask``
  (``bm25s``, which only zeroes the masked scores); ``bm25s_over_ours``.

Needs the prepared bi-encoder.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from bench_common import BM25_PARAMS, record_ratio

from hybrid_engine import ModelNotFoundError

QUERIES = 50
BATCHES = 4
SELECTIVITIES = [0.001, 0.01, 0.1, 0.5]
_STATE: dict[str, Any] = {}


@pytest.fixture(scope="module")
def live(shared_data: Any, scifact_queries: list[str]) -> dict[str, Any]:
    from hybrid_engine import EmbeddingCache, Encoder
    from hybrid_engine.evaluation import load_beir

    try:
        encoder = Encoder.load()
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
    rng = np.random.default_rng(0)
    corpus = [
        {**doc, "metadata": {"bucket": int(b)}}
        for doc, b in zip(
            load_beir(shared_data / "beir" / "scifact").corpus,
            rng.permutation(5183),
            strict=False,
        )
    ]
    return {
        "corpus": corpus,
        "encoder": encoder,
        "cache": EmbeddingCache(),
        "queries": scifact_queries[:QUERIES],
    }


def _fresh(live: dict[str, Any], corpus: list[dict]) -> Any:
    from hybrid_engine import HybridIndex

    return HybridIndex.build(corpus, encoder=live["encoder"], embedding_cache=live["cache"])


def _grown(live: dict[str, Any]) -> Any:
    """A live engine of a fifth of the corpus that adds the rest in ``BATCHES`` commits."""
    corpus = live["corpus"]
    step = len(corpus) // (BATCHES + 1)
    engine = _fresh(live, corpus[:step])
    for b in range(1, BATCHES + 1):
        stop = len(corpus) if b == BATCHES else (b + 1) * step
        engine.add(corpus[b * step : stop])
        engine.commit(embedding_cache=live["cache"])
    return engine


@pytest.mark.parametrize("side", ["fresh", "live"])
def test_adding_documents(benchmark, live, side: str) -> None:
    group = "live-add-scifact"
    benchmark.group = group
    build = (lambda: _fresh(live, live["corpus"])) if side == "fresh" else lambda: _grown(live)
    engine = benchmark.pedantic(build, rounds=3, iterations=1, warmup_rounds=1)
    assert len(engine) == len(live["corpus"])
    benchmark.extra_info["documents"] = len(engine)
    record_ratio(benchmark, group, side, reference="fresh")


def _engines(live: dict[str, Any]) -> tuple[Any, Any]:
    """(five segments with 10% deleted, a fresh engine of the same live documents)."""
    if "segments" not in _STATE:
        engine = _grown(live)
        ids = [doc["_id"] for doc in live["corpus"]]
        gone = set(np.random.default_rng(1).choice(ids, len(ids) // 10, replace=False))
        engine.delete(sorted(gone))
        engine.commit()
        assert engine.num_segments == BATCHES + 1
        merged = _fresh(live, [d for d in live["corpus"] if d["_id"] not in gone])
        _STATE["segments"], _STATE["merged"] = engine, merged
    return _STATE["segments"], _STATE["merged"]


@pytest.mark.parametrize("side", ["segments", "merged"])
def test_search_over_segments(benchmark, live, side: str) -> None:
    engines = dict(zip(("segments", "merged"), _engines(live), strict=True))
    engine, queries = engines[side], live["queries"]
    # The same live documents rank alike: BM25 with live statistics, dense exact per segment.
    expected = engines["merged"].search(queries, 10).doc_ids
    assert engines["segments"].search(queries, 10).doc_ids == expected
    group = "live-segments-scifact-1q"
    benchmark.group = group
    benchmark.pedantic(
        lambda: [engine.search([q], 10, num_threads=1) for q in queries],
        rounds=5,
        iterations=1,
        warmup_rounds=1,
    )
    benchmark.extra_info["queries_per_round"] = QUERIES
    record_ratio(benchmark, group, side, reference="merged")


@pytest.mark.parametrize("side", ["engine", "legs"])
def test_merged_search_against_its_legs(benchmark, live, side: str) -> None:
    from hybrid_engine import fuse

    merged = _engines(live)[1]
    queries, encoder = live["queries"], live["encoder"]
    bm25, dense = merged.bm25, merged.dense

    def by_hand(query: str) -> Any:
        legs = [
            bm25.search([query], 100, num_threads=1),
            dense.search(encoder.encode([query]), 100, num_threads=1),
        ]
        return fuse(legs, 10, depth=100)

    if side == "engine":
        run = lambda: [merged.search([q], 10, num_threads=1) for q in queries]  # noqa: E731
    else:
        run = lambda: [by_hand(q) for q in queries]  # noqa: E731
    np.testing.assert_array_equal(merged.search([queries[0]], 10).ids, by_hand(queries[0]).ids)
    group = "live-merged-scifact-1q"
    benchmark.group = group
    benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1)
    benchmark.extra_info["queries_per_round"] = QUERIES
    record_ratio(benchmark, group, side, reference="legs")


@pytest.mark.parametrize("side", ["ours", "bm25s"])
@pytest.mark.parametrize("selectivity", SELECTIVITIES)
def test_filtered_bm25(
    benchmark, scifact_engines, bm25s_module, stemmer, scifact_queries, side, selectivity
) -> None:
    ours, retriever = scifact_engines
    queries = scifact_queries[:QUERIES]
    allowed = np.random.default_rng(int(selectivity * 1000)).random(ours.num_documents)
    allowed = allowed < selectivity
    weights = allowed.astype(np.float32)
    if side == "ours":

        def run() -> Any:
            return [ours.search([q], 10, num_threads=1, allowed=allowed) for q in queries]

    else:

        def run() -> Any:
            out = []
            for q in queries:
                tokens = bm25s_module.tokenize(
                    [q], stopwords="en", stemmer=stemmer, return_ids=True, show_progress=False
                )
                out.append(
                    retriever.retrieve(
                        tokens, k=10, n_threads=1, show_progress=False, weight_mask=weights
                    )
                )
            return out

    found = run()
    if side == "ours":  # every hit passes the filter, and rows are full when 10 documents match
        assert all(allowed[r.ids[r.ids >= 0]].all() for r in found)
    else:  # bm25s returns masked documents with score 0 once fewer than k match
        benchmark.extra_info["masked_hits_returned"] = int(
            sum((~allowed[d[0]]).sum() for d, _ in found)
        )
    group = f"filter-bm25-scifact-{selectivity:.1%}-1q"
    benchmark.group = group
    benchmark.pedantic(run, rounds=5, iterations=1, warmup_rounds=1)
    benchmark.extra_info["params"] = BM25_PARAMS
    record_ratio(benchmark, group, side, reference="ours")
