"""The asyncio face: ``asearch`` answers as ``search``, 64 at once from one loop; the async
writes leave the engine equal to a fresh build of its documents; LangChain's and LlamaIndex's
async retrievers and the server go through ``asearch``. (The loop's lag while searches run is
measured in benchmarks/test_async_lag.py: no timing here.)"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest
from live_oracle import QUERIES, assert_hybrid_equals_fresh, document, new_engine

from hybrid_engine import HybridIndex

N_DOCS = 40


@pytest.fixture
def engine() -> HybridIndex:
    return new_engine([document(i) for i in range(N_DOCS)])


def test_asearch_answers_as_search(engine: HybridIndex) -> None:
    options: dict[str, Any] = {"filter": {"group": 1}, "fusion": "rrf", "offset": 2}
    got = asyncio.run(engine.asearch(QUERIES, 5, **options))
    expected = engine.search(QUERIES, 5, **options)
    assert np.array_equal(got.ids, expected.ids) and np.array_equal(got.scores, expected.scores)
    with pytest.raises(ValueError, match="offset"):
        asyncio.run(engine.asearch(QUERIES, 5, offset=-1))


def test_64_concurrent_asearches_from_one_loop(engine: HybridIndex) -> None:
    queries = [QUERIES[i % len(QUERIES)] for i in range(64)]
    expected = {q: engine.search(q, 10).doc_ids for q in QUERIES}

    async def run() -> list[Any]:
        return await asyncio.gather(*(engine.asearch(q, 10) for q in queries))

    for query, result in zip(queries, asyncio.run(run()), strict=True):
        assert result.doc_ids == expected[query]


def test_async_writes_equal_a_fresh_build(engine: HybridIndex) -> None:
    async def run() -> None:
        added = await engine.aadd([document(i) for i in range(N_DOCS, N_DOCS + 10)])
        assert added == [f"d{i}" for i in range(N_DOCS, N_DOCS + 10)]
        await engine.aupsert([document(3, version=1)])
        assert await engine.adelete(["d5", "d7"]) == 2
        await engine.acommit()
        hits = await engine.aget(["d3", "d45"])
        assert [hit.id for hit in hits] == ["d3", "d45"] and hits[0].metadata["v"] == 1
        await engine.amerge()
        found = await engine.asearch(QUERIES, 5)
        assert found.doc_ids == engine.search(QUERIES, 5).doc_ids

    asyncio.run(run())
    assert len(engine) == N_DOCS + 10 - 2
    assert_hybrid_equals_fresh(engine)


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Records each ``HybridIndex.asearch`` call's queries (then runs it)."""
    calls: list[Any] = []
    original = HybridIndex.asearch

    async def asearch(self: HybridIndex, queries: Any, k: int = 10, **options: Any) -> Any:
        calls.append(queries)
        return await original(self, queries, k, **options)

    monkeypatch.setattr(HybridIndex, "asearch", asearch)
    return calls


def test_the_async_retrievers_go_through_asearch(
    engine: HybridIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
    pytest.importorskip("llama_index.core", reason="the llamaindex extra is not installed")
    from hybrid_engine.integrations import langchain, llamaindex

    calls = _spy(monkeypatch)
    expected = engine.search(QUERIES[0], 3).doc_ids[0]
    retriever = langchain.HybridRetriever(engine=engine, search_kwargs={"k": 3})
    assert [d.id for d in asyncio.run(retriever.ainvoke(QUERIES[0]))] == expected
    store = langchain.HybridVectorStore(engine)
    assert [d.id for d in asyncio.run(store.asimilarity_search(QUERIES[0], k=3))] == expected
    nodes = asyncio.run(
        llamaindex.HybridRetriever(engine, similarity_top_k=3).aretrieve(QUERIES[0])
    )
    assert [n.node.id_ for n in nodes] == expected
    assert calls == [QUERIES[0]] * 3


def test_the_server_searches_through_asearch(
    engine: HybridIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from hybrid_engine.server import create_app

    calls = _spy(monkeypatch)
    answer = TestClient(create_app(engine)).post("/search", json={"queries": QUERIES, "k": 3})
    assert answer.status_code == 200, answer.text
    assert calls == [QUERIES]
