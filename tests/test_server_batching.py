"""Micro-batching: requests that wait while the engine is busy share one engine call, each
gets exactly its own rows, groups never mix options, the queue is bounded, one request's
error stays its own; and through a real server on loopback, concurrent batched answers equal
the engine's answer to each request alone.

The batcher is driven with a fake engine call that records its batches and blocks until the
test releases it, so which requests wait together is decided by the test, not by timing."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

import pytest
from live_oracle import QUERIES, document, new_engine

from hybrid_engine.result import Hit

pytest.importorskip("fastapi", reason="the serve extra is not installed")
from hybrid_engine.server.batching import (
    BatcherFullError,
    BatchPolicy,
    Rows,
    SearchBatcher,
)


class FakeEngine:
    """An async engine call whose hit for text ``t`` is ``Hit(t, k)``; records each batch;
    holds every call until ``release`` is set."""

    def __init__(self) -> None:
        self.batches: list[tuple[list[str], dict[str, Any]]] = []
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)

    async def __call__(self, texts: list[str], options: Mapping[str, Any]) -> Rows:
        """In a worker thread, as ``HybridIndex.asearch`` runs a search."""
        return await asyncio.to_thread(self._call, texts, options)

    def _call(self, texts: list[str], options: Mapping[str, Any]) -> Rows:
        self.batches.append((list(texts), dict(options)))
        self.entered.release()
        self.release.wait(timeout=10.0)
        if any(t.startswith("boom") for t in texts):
            raise ValueError(f"bad query among {texts}")
        hits = [[Hit(t, float(options["k"]), "", "", {})] for t in texts]
        return Rows(hits, {"total": 1.0})


async def wait_entered(fake: FakeEngine, calls: int = 1) -> None:
    for _ in range(calls):
        while not fake.entered.acquire(blocking=False):
            await asyncio.sleep(0.001)


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_an_idle_engine_runs_a_request_at_once() -> None:
    fake = FakeEngine()
    fake.release.set()
    batcher = SearchBatcher(fake, BatchPolicy(max_running=1))
    answer = run(batcher.search(["a", "b"], {"k": 3}))
    assert fake.batches == [(["a", "b"], {"k": 3})]
    assert [[h.id for h in row] for row in answer.hits] == [["a"], ["b"]]
    assert answer.batch_size == 2


def test_requests_waiting_while_busy_share_one_call_and_get_their_own_rows() -> None:
    fake = FakeEngine()
    batcher = SearchBatcher(fake, BatchPolicy(max_running=1))

    async def scenario() -> list[Any]:
        first = asyncio.ensure_future(batcher.search(["q0"], {"k": 1}))
        await wait_entered(fake)  # the engine is busy with q0
        waiting = [
            asyncio.ensure_future(batcher.search(texts, {"k": 1}))
            for texts in (["q1"], ["q2", "q3"], ["q4"])
        ]
        await asyncio.sleep(0.05)  # all three are queued
        fake.release.set()
        return await asyncio.gather(first, *waiting)

    answers = run(scenario())
    assert [b[0] for b in fake.batches] == [["q0"], ["q1", "q2", "q3", "q4"]]
    assert [[[h.id for h in row] for row in a.hits] for a in answers] == [
        [["q0"]],
        [["q1"]],
        [["q2"], ["q3"]],
        [["q4"]],
    ]
    assert [a.batch_size for a in answers] == [1, 4, 4, 4]


def test_groups_never_mix_options_and_respect_max_batch() -> None:
    fake = FakeEngine()
    batcher = SearchBatcher(fake, BatchPolicy(max_batch=2, max_running=1))

    async def scenario() -> list[Any]:
        first = asyncio.ensure_future(batcher.search(["busy"], {"k": 1}))
        await wait_entered(fake)
        waiting = [
            asyncio.ensure_future(batcher.search([text], {"k": k}))
            for text, k in (("a", 1), ("b", 2), ("c", 1), ("d", 2), ("e", 1))
        ]
        await asyncio.sleep(0.05)
        fake.release.set()
        return await asyncio.gather(first, *waiting)

    answers = run(scenario())
    assert all(len(texts) <= 2 for texts, _ in fake.batches)
    got = {t: o["k"] for texts, o in fake.batches for t in texts}
    assert got == {"busy": 1, "a": 1, "b": 2, "c": 1, "d": 2, "e": 1}
    assert sorted(t for texts, _ in fake.batches for t in texts) == sorted(["busy", *"abcde"])
    assert [a.hits[0][0].score for a in answers] == [1.0, 1.0, 2.0, 1.0, 2.0, 1.0]


def test_no_more_than_max_running_calls_run_at_once() -> None:
    fake = FakeEngine()
    batcher = SearchBatcher(fake, BatchPolicy(max_batch=1, max_running=2))

    async def scenario() -> list[Any]:
        tasks = [asyncio.ensure_future(batcher.search([f"q{i}"], {"k": 1})) for i in range(6)]
        await wait_entered(fake, 2)
        await asyncio.sleep(0.05)
        started = len(fake.batches)  # two run, four wait
        fake.release.set()
        return [started, *await asyncio.gather(*tasks)]

    started, *answers = run(scenario())
    assert started == 2
    assert [a.hits[0][0].id for a in answers] == [f"q{i}" for i in range(6)]
    assert sorted(b[0][0] for b in fake.batches) == [f"q{i}" for i in range(6)]


def test_the_queue_is_bounded() -> None:
    fake = FakeEngine()
    batcher = SearchBatcher(fake, BatchPolicy(max_running=1, max_queued=3))

    async def scenario() -> None:
        first = asyncio.ensure_future(batcher.search(["busy"], {"k": 1}))
        await wait_entered(fake)
        queued = asyncio.ensure_future(batcher.search(["a", "b"], {"k": 1}))
        await asyncio.sleep(0.01)
        with pytest.raises(BatcherFullError, match="max_queued=3"):
            await batcher.search(["c", "d"], {"k": 1})
        fake.release.set()
        await asyncio.gather(first, queued)

    run(scenario())


def test_an_error_in_a_batch_goes_to_its_own_request_only() -> None:
    fake = FakeEngine()
    batcher = SearchBatcher(fake, BatchPolicy(max_running=1))

    async def scenario() -> list[Any]:
        first = asyncio.ensure_future(batcher.search(["busy"], {"k": 1}))
        await wait_entered(fake)
        waiting = [
            asyncio.ensure_future(batcher.search([text], {"k": 1})) for text in ("a", "boom", "b")
        ]
        await asyncio.sleep(0.05)
        fake.release.set()
        return await asyncio.gather(first, *waiting, return_exceptions=True)

    answers = run(scenario())
    assert isinstance(answers[2], ValueError) and "boom" in str(answers[2])
    assert [answers[i].hits[0][0].id for i in (0, 1, 3)] == ["busy", "a", "b"]


@pytest.mark.parametrize(
    "policy",
    [{"max_batch": 0}, {"max_running": 0}, {"max_queued": True}],
)
def test_bad_policies_are_refused(policy: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(policy))):
        BatchPolicy(**policy)


def test_concurrent_requests_to_a_live_server_get_the_engines_own_answers() -> None:
    httpx = pytest.importorskip("httpx", reason="the serve extra is not installed")
    from hybrid_engine.server import create_app
    from hybrid_engine.server.background import serve_in_thread

    engine = new_engine([document(i) for i in range(40)])
    queries = [q for q in QUERIES for _ in range(4)]
    expected = {q: [asdict(h) for h in engine.search([q], k=5).hits()[0]] for q in set(queries)}
    batch_sizes = []
    app = create_app(engine, batching=BatchPolicy(max_batch=8))
    with serve_in_thread(app) as url, ThreadPoolExecutor(8) as pool:

        def ask(query: str) -> tuple[str, Any]:
            with httpx.Client(base_url=url, timeout=30.0) as http:
                response = http.post("/search", json={"query": query, "k": 5})
            assert response.status_code == 200, response.text
            return query, response.json()

        for query, body in pool.map(ask, queries * 3):
            assert body["results"][0]["hits"] == expected[query]
            batch_sizes.append(body["batch_size"])
    assert min(batch_sizes) >= 1 and max(batch_sizes) <= 8
