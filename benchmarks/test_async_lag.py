"""The event loop while searches run: 64 concurrent ``asearch`` calls against the same 64
searches called on the loop itself, on SciFact (5,183 documents, BM25 + int8 dense).

A ticker task on the same loop asks to wake every millisecond and records how late each
wake-up is; ``extra_info`` gets the largest and the 99th-percentile lateness in milliseconds
(``loop_lag_max_ms``, ``loop_lag_p99_ms``), and ``record_ratio`` the time of the blocking
side over the ``asearch`` side. On the blocking side the loop is stuck for the whole batch
(its lag is the batch's time); with ``asearch`` it stays responsive while the searches run in
worker threads, sharing the cores and, in their Python parts, the GIL.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np
import pytest
from bench_common import record_ratio

from hybrid_engine import ModelNotFoundError

CONCURRENT = 64


@pytest.fixture(scope="module")
def engine(shared_data: Any) -> Any:
    from hybrid_engine import EmbeddingCache, Encoder, HybridIndex
    from hybrid_engine.evaluation import load_beir

    try:
        encoder = Encoder.load()
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
    corpus = load_beir(shared_data / "beir" / "scifact").corpus
    return HybridIndex.build(corpus, encoder=encoder, embedding_cache=EmbeddingCache())


async def _ticking(work: Any) -> tuple[Any, list[float]]:
    """``await work()`` while a ticker records how late each 1 ms wake-up is (ms)."""
    late: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        while not done.is_set():
            asked = time.perf_counter()
            await asyncio.sleep(0.001)
            late.append((time.perf_counter() - asked) * 1000 - 1.0)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0)  # the ticker is waiting before the work starts
    result = await work()
    done.set()
    await ticker
    return result, late


@pytest.mark.parametrize("side", ["asearch", "blocking"])
def test_event_loop_lag(benchmark: Any, engine: Any, scifact_queries: list[str], side: str) -> None:
    queries = scifact_queries[:CONCURRENT]

    async def concurrent() -> list[Any]:
        return await asyncio.gather(*(engine.asearch(q, 10) for q in queries))

    async def blocking() -> list[Any]:
        return [engine.search(q, 10) for q in queries]

    work = concurrent if side == "asearch" else blocking
    lags: list[float] = []

    def run() -> list[Any]:
        results, late = asyncio.run(_ticking(work))
        lags.extend(late)
        return results

    results = benchmark.pedantic(run, rounds=3, iterations=1)
    assert [r.doc_ids for r in results] == [engine.search(q, 10).doc_ids for q in queries]
    if lags:
        benchmark.extra_info["loop_lag_max_ms"] = float(np.max(lags))
        benchmark.extra_info["loop_lag_p99_ms"] = float(np.percentile(lags, 99))
    record_ratio(benchmark, "async-loop-lag", side, reference="asearch")
