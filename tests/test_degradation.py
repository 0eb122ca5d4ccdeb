"""Graceful degradation by fault injection: the engine's real models wrapped in doubles that
raise (a genuine ONNX Runtime error, a RuntimeError) or sleep. A degraded search must equal
the search of an engine built without the failing stage (an independent reference), say so
(``degraded``, ``skipped``, one ``DegradedWarning``), count it, and raise under ``strict``;
a budget skips the stages that would overrun it. A prepared model folder copied to a
temporary models folder and damaged there makes ``HybridIndex.load`` fail with the fix, or
load the other legs with ``allow_degraded``."""

from __future__ import annotations

import shutil
import threading
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

from hybrid_engine import (
    DegradedEngineError,
    DegradedWarning,
    HybridIndex,
    HybridResult,
    IndexFormatError,
    ModelNotFoundError,
    StageError,
)
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.session import create_session
from hybrid_engine.pipeline.budget import plan_skips
from hybrid_engine.pipeline.costs import EWMA_ALPHA, StageCosts

WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()
CORPUS = [
    {
        "_id": f"d{i}",
        "title": WORDS[i % 15],
        "text": " ".join(WORDS[(i * 7 + j) % 15] for j in range(6)),
    }
    for i in range(60)
]
QUERIES = ["cat on the mat", "river stone", "snow and wind fire", "moon", ""]
SLEEP_S = 0.3
"""How long a sleeping double takes: far over every budget of these tests."""


class Faulty:
    """A model double: passes calls to the real model until told to ``fail`` (a genuine ONNX
    Runtime error from the model's own graph fed int32 ids, or the exception given) or to
    ``sleep`` first. Counts its calls."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.error: BaseException | str | None = None
        self.sleep_s = 0.0
        self.calls = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:  # dim, model_hash, vocab_size, name, training
        return getattr(self.model, name)

    def _fault(self) -> None:
        with self._lock:
            self.calls += 1
        if self.error == "onnx":
            session = create_session(self.model.info.variant_file(self.model.variant), 1)
            ids = np.zeros((1, 3), np.int64)
            feed = {"input_ids": ids.astype(np.int32), "attention_mask": ids, "token_type_ids": ids}
            session.run(None, feed)  # raises onnxruntime's InvalidArgument
        elif isinstance(self.error, BaseException):
            raise self.error
        if self.sleep_s:
            time.sleep(self.sleep_s)

    def encode(self, texts: Sequence[str], **options: Any) -> Any:
        self._fault()
        return self.model.encode(texts, **options)

    # The engine embeds queries and documents through these where an encoder has them
    # (dense.encoding.sided): a double of one must fault there too.
    def encode_query(self, texts: Sequence[str], **options: Any) -> Any:
        self._fault()
        return self.model.encode_query(texts, **options)

    def encode_document(self, texts: Sequence[str], **options: Any) -> Any:
        self._fault()
        return self.model.encode_document(texts, **options)

    def score(self, queries: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        self._fault()
        return self.model.score(queries, passages)


class OverlapScorer:
    """A cross-encoder stand-in whose order differs from the fused one: query words in the
    passage, minus a length penalty."""

    name = "overlap"
    training = None

    def score(self, queries: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        return np.array(
            [
                len(set(q.split()) & set(p.split())) - 0.01 * len(p)
                for q, p in zip(queries, passages)
            ],
            np.float32,
        )


def same(result: HybridResult, reference: HybridResult) -> None:
    """The same hits and scores."""
    np.testing.assert_array_equal(result.ids, reference.ids)
    np.testing.assert_array_equal(result.scores, reference.scores)
    assert result.doc_ids == reference.doc_ids


def quiet_search(engine: HybridIndex, *args: Any, **options: Any) -> HybridResult:
    """A search that must issue no DegradedWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DegradedWarning)
        return engine.search(*args, **options)


@pytest.fixture(scope="module")
def bm25_only() -> HybridIndex:
    """The reference of a search without its model legs."""
    return HybridIndex.build(CORPUS, retrievers=("bm25",))


@pytest.fixture
def dense_double(encoder: Encoder) -> Faulty:
    return Faulty(encoder)


@pytest.fixture
def hybrid(dense_double: Faulty) -> HybridIndex:
    """BM25 and dense, the bi-encoder behind a double (healthy at build)."""
    return HybridIndex.build(CORPUS, retrievers=("bm25", "dense"), encoder=dense_double)


@pytest.mark.parametrize("error", ["onnx", RuntimeError("the encoder broke")])
def test_failing_dense_leg_serves_bm25(
    hybrid: HybridIndex, dense_double: Faulty, bm25_only: HybridIndex, error: Any
) -> None:
    healthy = quiet_search(hybrid, QUERIES)
    assert healthy.degraded == [] and healthy.skipped == [] and "dense" in healthy.timings
    dense_double.error = error
    with pytest.warns(DegradedWarning, match=r"dense.*hybrid-engine models prepare") as record:
        result = hybrid.search(QUERIES)
    assert len([w for w in record if w.category is DegradedWarning]) == 1
    assert record[0].filename == __file__  # attributed to the caller
    reference = bm25_only.search(QUERIES)
    same(result, reference)
    assert result.degraded == ["dense"] and result.skipped == []
    kind = "InvalidArgument" if error == "onnx" else "RuntimeError"
    assert result.reasons["dense"].startswith(f"error: {kind}(")
    assert "dense" not in result.timings
    again = quiet_search(hybrid, QUERIES)  # warned once per engine and leg
    same(again, reference)
    assert hybrid.degradations == {"dense": 2}


def test_strict_raises_the_stage_error(hybrid: HybridIndex, dense_double: Faulty) -> None:
    dense_double.error = "onnx"
    with pytest.raises(
        StageError, match=r"dense stage failed.*hybrid-engine models prepare"
    ) as info:
        hybrid.search(QUERIES, strict=True)
    assert isinstance(info.value.__cause__, InvalidArgument)
    assert hybrid.degradations == {}


def test_weights_of_the_legs_left(
    hybrid: HybridIndex, dense_double: Faulty, bm25_only: HybridIndex
) -> None:
    """A failed leg's weight goes with it; those left weighted 0 weigh equally (not all 0)."""
    dense_double.error = RuntimeError("down")
    with pytest.warns(DegradedWarning):
        weighted = hybrid.search(QUERIES, fusion="minmax", weights={"bm25": 0.5, "dense": 2.0})
    same(weighted, bm25_only.search(QUERIES, fusion="minmax"))
    zero = quiet_search(hybrid, QUERIES, fusion="minmax", weights={"bm25": 0.0})
    same(zero, bm25_only.search(QUERIES, fusion="minmax"))


def test_mmr_goes_with_the_dense_leg(
    hybrid: HybridIndex, dense_double: Faulty, bm25_only: HybridIndex
) -> None:
    dense_double.error = RuntimeError("down")
    with pytest.warns(DegradedWarning):
        result = hybrid.search(QUERIES, mmr=0.5)
    assert result.degraded == ["dense", "mmr"]
    same(result, bm25_only.search(QUERIES))
    given = np.asarray(hybrid.encoder.model.encode(QUERIES[:4]))
    with_vectors = hybrid.search(QUERIES[:4], mmr=0.5, query_vectors=given)
    assert with_vectors.degraded == []  # the given vectors need no encoder


def test_failing_splade_leg_serves_the_other_two(
    encoder: Encoder, splade_encoder: Any, bm25_only: HybridIndex
) -> None:
    splade = Faulty(splade_encoder)
    three = HybridIndex.build(
        CORPUS, retrievers=("bm25", "dense", "splade"), encoder=encoder, splade_encoder=splade
    )
    two = HybridIndex.build(CORPUS, retrievers=("bm25", "dense"), encoder=encoder)
    splade.error = RuntimeError("splade broke")
    with pytest.warns(DegradedWarning, match="splade"):
        result = three.search(QUERIES)
    assert result.degraded == ["splade"]
    same(result, two.search(QUERIES))


def test_every_leg_failing_raises(encoder: Encoder, splade_encoder: Any) -> None:
    dense, splade = Faulty(encoder), Faulty(splade_encoder)
    engine = HybridIndex.build(
        CORPUS, retrievers=("dense", "splade"), encoder=dense, splade_encoder=splade
    )
    dense.error = first = RuntimeError("dense broke")
    splade.error = RuntimeError("splade broke")
    with pytest.warns(DegradedWarning), pytest.raises(StageError, match="nothing to fuse") as info:
        engine.search(QUERIES)
    assert info.value.__cause__ is first
    assert "dense: error: RuntimeError('dense broke')" in str(info.value)


def test_failing_reranker_serves_the_fused_ranking(bm25_only: HybridIndex) -> None:
    scorer = Faulty(OverlapScorer())
    engine = bm25_only.with_reranker(scorer)
    reranked = quiet_search(engine, QUERIES, rerank=10)
    assert not np.array_equal(reranked.ids, bm25_only.search(QUERIES).ids)  # it reranks
    scorer.error = RuntimeError("the cross-encoder broke")
    with pytest.warns(DegradedWarning, match=r"rerank.*fused ranking.*prepare-reranker"):
        result = engine.search(QUERIES, rerank=10)
    assert result.degraded == ["rerank"] and "rerank" not in result.timings
    same(result, bm25_only.search(QUERIES))
    assert engine.degradations == {"rerank": 1} and bm25_only.degradations == {}


def test_bad_arguments_are_raised_before_any_stage(
    hybrid: HybridIndex, dense_double: Faulty
) -> None:
    dense_double.error = RuntimeError("down")
    calls = dense_double.calls
    for bad, error in [
        ({"k": 0}, ValueError),
        ({"budget_ms": 0}, ValueError),
        ({"budget_ms": float("nan")}, ValueError),
        ({"budget_ms": True}, ValueError),
        ({"strict": 1}, TypeError),
        ({"weights": {"splade": 1.0}}, ValueError),
        ({"weights": {"bm25": -1.0}}, ValueError),
        ({"fusion": "nope"}, ValueError),
        ({"mmr": 2.0}, ValueError),
    ]:
        with pytest.raises(error):
            hybrid.search(QUERIES, **bad)
    assert dense_double.calls == calls and hybrid.degradations == {}


def test_concurrent_degraded_searches_warn_once_and_count_each(
    hybrid: HybridIndex, dense_double: Faulty, bm25_only: HybridIndex
) -> None:
    dense_double.error = RuntimeError("down")
    reference = bm25_only.search(QUERIES)
    with pytest.warns(DegradedWarning) as record, ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: hybrid.search(QUERIES), range(16)))
    assert len([w for w in record if w.category is DegradedWarning]) == 1
    for result in results:
        same(result, reference)
    assert hybrid.degradations == {"dense": 16}


# -- budgets ---------------------------------------------------------------------------------


def test_plan_skips_rerank_first_then_the_costliest_legs() -> None:
    legs = {"dense": 30.0, "splade": 50.0}
    assert plan_skips(200, 10, {**legs, "rerank": 100.0}) == []
    assert plan_skips(100, 10, {**legs, "rerank": 100.0}) == ["rerank"]
    assert plan_skips(60, 10, {**legs, "rerank": 100.0}) == ["rerank", "splade"]
    assert plan_skips(30, 10, {**legs, "rerank": 1.0}) == ["rerank", "splade", "dense"]
    assert plan_skips(5, 10, {"dense": None, "rerank": None}) == []  # never measured: they run


def test_stage_costs_are_an_ewma_after_a_warm_up() -> None:
    costs = StageCosts()
    assert costs.estimate("dense", 4) is None
    costs.observe("dense", 1000.0, 4)  # the warm-up run: not counted
    assert costs.estimate("dense", 4) is None
    costs.observe("dense", 40.0, 4)  # 10 ms per query seeds it
    costs.observe("dense", 20.0, 1)  # 20 ms per query
    expected = 10.0 + EWMA_ALPHA * (20.0 - 10.0)
    assert costs.estimate("dense", 3) == pytest.approx(3 * expected)
    costs.observe("dense", 5.0, 0)  # no queries: nothing learnt
    assert costs.per_unit() == {"dense": pytest.approx(expected)}


def test_stage_costs_are_thread_safe() -> None:
    costs = StageCosts(alpha=1.0)  # the last observation wins: every one is 2 ms per unit
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: costs.observe("bm25", 2.0 * (i % 5 + 1), i % 5 + 1), range(400)))
    assert costs.per_unit() == {"bm25": pytest.approx(2.0)}


def test_sleeping_encoder_is_skipped_within_the_budget(
    hybrid: HybridIndex, dense_double: Faulty, bm25_only: HybridIndex
) -> None:
    quiet_search(hybrid, QUERIES)  # warm up: compilation and first runs are not in the budget
    dense_double.sleep_s = SLEEP_S
    reference = bm25_only.search(QUERIES)
    for _ in range(3):  # abandoned, then still running (busy), or planned out once measured
        result = quiet_search(hybrid, QUERIES, budget_ms=SLEEP_S * 1000 / 3)
        assert result.skipped == ["dense"] and result.degraded == []
        assert result.reasons["dense"] in ("timeout", "busy", "budget")
        same(result, reference)
    assert hybrid.budget_skips == {"dense": 3} and hybrid.degradations == {}


def test_sleeping_reranker_is_skipped_within_the_budget(bm25_only: HybridIndex) -> None:
    scorer = Faulty(OverlapScorer())
    scorer.sleep_s = SLEEP_S
    engine = bm25_only.with_reranker(scorer)
    result = quiet_search(engine, QUERIES, rerank=10, budget_ms=SLEEP_S * 1000 / 3)
    assert result.skipped == ["rerank"] and result.reasons["rerank"] in ("timeout", "budget")
    same(result, bm25_only.search(QUERIES))


def test_a_stage_unmeasured_for_long_is_probed_once() -> None:
    now = [0.0]
    costs = StageCosts(probe_after_s=30.0, clock=lambda: now[0])
    assert not costs.claim_probe("rerank")  # never measured: nothing to probe
    costs.observe("rerank", 900.0, 10)
    now[0] = 29.0
    assert not costs.claim_probe("rerank")
    now[0] = 31.0
    assert costs.claim_probe("rerank")
    assert not costs.claim_probe("rerank")  # the claim restarts the wait: one probe
    now[0] = 62.0
    assert costs.claim_probe("rerank")


def test_a_reranker_that_recovers_is_probed_and_used_again(bm25_only: HybridIndex) -> None:
    scorer = Faulty(OverlapScorer())
    engine = bm25_only.with_reranker(scorer)
    now = [0.0]
    engine._health.costs = StageCosts(probe_after_s=30.0, clock=lambda: now[0])  # a fake clock
    reranked = quiet_search(engine, QUERIES, rerank=10)  # the warm-up run, not counted
    scorer.sleep_s = SLEEP_S
    budget = SLEEP_S * 1000 / 3
    for _ in range(20):  # abandoned (timeout), busy while it sleeps, then measured: planned out
        result = quiet_search(engine, QUERIES, rerank=10, budget_ms=budget)
        assert result.skipped == ["rerank"]
        if result.reasons["rerank"] == "budget":
            break
        time.sleep(SLEEP_S / 3)
    assert result.reasons["rerank"] == "budget"
    scorer.sleep_s = 0.0  # the model recovers
    assert quiet_search(engine, QUERIES, rerank=10, budget_ms=budget).skipped == ["rerank"]
    now[0] = 31.0  # long unmeasured: the next budgeted search probes it, and it fits again
    for _ in range(3):
        result = quiet_search(engine, QUERIES, rerank=10, budget_ms=budget)
        assert result.skipped == [] and "rerank" in result.timings
        same(result, reranked)


def test_an_exhausted_budget_keeps_bm25_only(hybrid: HybridIndex, bm25_only: HybridIndex) -> None:
    engine = hybrid.with_reranker(OverlapScorer())
    result = quiet_search(engine, QUERIES, rerank=10, budget_ms=1e-6)
    assert result.skipped == ["dense", "rerank"]
    assert result.reasons == {"dense": "budget", "rerank": "budget"}
    same(result, bm25_only.search(QUERIES))


def test_a_generous_budget_changes_nothing(hybrid: HybridIndex) -> None:
    engine = hybrid.with_reranker(OverlapScorer())
    reference = quiet_search(engine, QUERIES, rerank=10, mmr=0.7)
    for _ in range(3):  # the stages run in worker threads, and are measured
        result = quiet_search(engine, QUERIES, rerank=10, mmr=0.7, budget_ms=1e7)
        assert result.skipped == [] and result.degraded == []
        same(result, reference)
    assert set(engine.stage_costs) == {"bm25", "dense", "fusion", "rerank", "mmr"}


# -- load ------------------------------------------------------------------------------------


@pytest.fixture
def saved_with_copied_model(
    model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path]:
    """An index saved with the bi-encoder of a models folder of its own (a copy of the
    prepared one), and that copy's folder."""
    models = tmp_path / "models"
    shutil.copytree(model_path, models / model_path.name)
    monkeypatch.setenv("HYBRID_ENGINE_MODELS", str(models))
    encoder = Encoder.load(model_path.name, variant="int8")
    index = tmp_path / "index"
    HybridIndex.build(CORPUS, retrievers=("bm25", "dense"), encoder=encoder).save(index)
    return index, models / model_path.name


def test_load_with_a_damaged_model(
    saved_with_copied_model: tuple[Path, Path], bm25_only: HybridIndex
) -> None:
    index, folder = saved_with_copied_model
    assert HybridIndex.load(index).degraded == ()
    with open(folder / "model_int8.onnx", "r+b") as f:  # flip bytes in the middle
        f.seek(1 << 20)
        chunk = f.read(64)
        f.seek(1 << 20)
        f.write(bytes(b ^ 0xFF for b in chunk))
    with pytest.raises(IndexFormatError, match="sha256") as info:
        HybridIndex.load(index)
    message = str(info.value)
    assert str(folder) in message and "hybrid-engine models prepare --force" in message
    assert "allow_degraded=True" in message
    with pytest.warns(DegradedWarning, match="dense.*sha256") as record:
        engine = HybridIndex.load(index, allow_degraded=True)
    assert len([w for w in record if w.category is DegradedWarning]) == 1
    assert engine.degraded == ("dense",) and engine.retrievers == ("bm25",)
    result = quiet_search(engine, QUERIES)  # warned at load
    assert result.degraded == ["dense"] and result.reasons["dense"].startswith("not loaded")
    same(result, bm25_only.search(QUERIES))
    same(quiet_search(engine, QUERIES, weights={"dense": 2.0}), bm25_only.search(QUERIES))
    with pytest.raises(DegradedEngineError, match="without its dense leg"):
        engine.add([{"_id": "new", "text": "cat"}])
    with pytest.raises(DegradedEngineError):
        engine.commit()
    assert engine.degradations == {"dense": 2}


def test_load_with_a_missing_model(
    saved_with_copied_model: tuple[Path, Path], bm25_only: HybridIndex, capsys: Any
) -> None:
    from hybrid_engine.cli import main

    index, folder = saved_with_copied_model
    shutil.rmtree(folder)
    with pytest.raises(ModelNotFoundError, match=r"hybrid-engine models prepare"):
        HybridIndex.load(index)
    with pytest.warns(DegradedWarning, match="dense"):
        engine = HybridIndex.load(index, allow_degraded=True)
    same(quiet_search(engine, QUERIES), bm25_only.search(QUERIES))
    with pytest.warns(DegradedWarning):
        assert main(["search", str(index), "river stone", "--json", "--allow-degraded"]) == 0
    assert '"id": "' in capsys.readouterr().out


def test_server_counts_degraded_searches(hybrid: HybridIndex, dense_double: Faulty) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from hybrid_engine.server import create_app

    dense_double.error = RuntimeError("down")
    client = TestClient(create_app(hybrid))
    with pytest.warns(DegradedWarning):
        for _ in range(2):
            assert client.post("/search", json={"query": "river stone"}).status_code == 200
    metrics = client.get("/metrics").text
    assert 'hybrid_engine_search_degraded_total{stage="dense"} 2.0' in metrics


def test_server_search_reports_degraded_and_strict_is_503(
    hybrid: HybridIndex, dense_double: Faulty, bm25_only: HybridIndex
) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from hybrid_engine.server import create_app

    client = TestClient(create_app(hybrid))
    healthy = client.post("/search", json={"query": "river stone"}).json()
    assert healthy["degraded"] == [] and healthy["skipped"] == []
    dense_double.error = RuntimeError("down")
    with pytest.warns(DegradedWarning):
        body = client.post("/search", json={"query": "river stone", "k": 5}).json()
    assert body["degraded"] == ["dense"] and body["skipped"] == []
    served = [hit["id"] for hit in body["results"][0]["hits"]]
    assert served == bm25_only.search(["river stone"], 5).doc_ids[0]
    strict = client.post("/search", json={"query": "river stone", "strict": True})
    assert strict.status_code == 503 and "dense" in strict.text


def test_server_search_passes_the_budget(hybrid: HybridIndex, bm25_only: HybridIndex) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from hybrid_engine.server import create_app

    sleepy = Faulty(OverlapScorer())
    client = TestClient(create_app(hybrid.with_reranker(sleepy)))  # type: ignore[arg-type]
    sleepy.sleep_s = SLEEP_S
    request = {"query": "river stone", "k": 5, "rerank": 10, "budget_ms": 50}
    body = client.post("/search", json=request).json()
    assert body["skipped"] == ["rerank"] and body["degraded"] == []
    fused = hybrid.search(["river stone"], 5)
    assert [hit["id"] for hit in body["results"][0]["hits"]] == fused.doc_ids[0]
    bad = client.post("/search", json={"query": "river stone", "budget_ms": 0})
    assert bad.status_code == 422 and "budget_ms" in bad.text


def test_strategies_and_parent_documents_pass_on_what_was_left_out(
    dense_double: Faulty, bm25_only: HybridIndex
) -> None:
    from hybrid_engine import ParentDocumentIndex
    from hybrid_engine.strategies import decompose

    engine = HybridIndex.build(CORPUS, retrievers=("bm25", "dense"), encoder=dense_double)
    parents = ParentDocumentIndex.build(CORPUS, retrievers=("bm25", "dense"), encoder=dense_double)
    dense_double.error = RuntimeError("down")
    with pytest.warns(DegradedWarning):
        result = decompose(engine, QUERIES[:2], lambda prompt: "1. fish bird", 5)
    assert result.degraded == ["dense"] and result.skipped == []
    assert result.reasons["dense"].startswith("error")
    assert all(trace.left_out["degraded"].keys() == {"dense"} for trace in result.traces)
    reference = decompose(bm25_only, QUERIES[:2], lambda prompt: "1. fish bird", 5)
    assert result.doc_ids == reference.doc_ids  # fused from BM25 alone
    with pytest.warns(DegradedWarning):
        found = parents.search(QUERIES[:2], 5)
    assert found.degraded == ["dense"] and found.skipped == []


def test_strict_raises_damaged_files_found_while_searching_as_themselves(
    tmp_path: Path,
) -> None:
    """A posting list a memory-mapped load did not check, damaged (checksums kept valid):
    ``strict`` raises its ``IndexFormatError`` naming the files and the rebuild, not a
    ``StageError`` pointing at a model; without ``strict`` the search serves the other leg."""
    from index_dirs import rewrite
    from sparse_oracle import HashingSparseEncoder

    sparse = HashingSparseEncoder()
    corpus = [{"_id": f"d{i}", "text": f"river stone {i} zebra" * (1 + i % 3)} for i in range(12)]
    engine = HybridIndex.build(corpus, retrievers=("bm25", "splade"), splade_encoder=sparse)
    engine.save(tmp_path / "idx")
    engine.close()
    leg = tmp_path / "idx" / "seg-000000" / "bm25"
    postings, offsets = np.load(leg / "postings.npy"), np.load(leg / "posting_offsets.npy")
    term = len(offsets) - 2
    assert postings[offsets[term + 1] - 2] < 0x80  # the last posting's gap is one byte
    postings[offsets[term + 1] - 2] = 0x7F  # now past the last document
    rewrite(leg, "postings", postings)
    loaded = HybridIndex.load(tmp_path / "idx", splade_encoder=sparse, mmap=True)
    broken = loaded.bm25.terms[term]  # type: ignore[union-attr]
    with pytest.raises(IndexFormatError, match=f"{leg}: the postings of term {term}"):
        loaded.search([broken], 3, strict=True)
    with pytest.warns(DegradedWarning):
        served = loaded.search([broken], 3)
    assert served.degraded == ["bm25"] and served.reasons["bm25"].startswith("error: IndexFormat")
