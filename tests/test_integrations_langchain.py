"""The LangChain adapters return exactly the engine's hits (ids, order, scores, metadata)
through LangChain's own calls (``invoke``, ``similarity_search``, ``as_retriever``); the
vector store's ``add_documents``/``delete`` change the live index, and its ``get_by_ids``
reads the documents committed.

The framework is imported in a fixture, so that a missing ``langchain`` extra is a skip here
and a failure under CI (tests/conftest.py; a module-level ``importorskip`` would be a
collection skip, which that rule does not see)."""

from __future__ import annotations

import asyncio
import math
from types import ModuleType
from typing import Any

import pytest
from dense_oracle import HashingEncoder
from live_oracle import QUERIES, document, live_documents, new_engine

from hybrid_engine import HybridIndex


@pytest.fixture(scope="module")
def lc() -> ModuleType:
    """``hybrid_engine.integrations.langchain``, or a skip when langchain-core is absent."""
    pytest.importorskip("langchain_core", reason="the langchain extra is not installed")
    from hybrid_engine.integrations import langchain

    return langchain


@pytest.fixture
def engine() -> HybridIndex:
    return new_engine([document(i) for i in range(30)])


def expected(hits: list[Any]) -> list[tuple[str | None, str, dict[str, Any]]]:
    """The documents the adapters must return for the engine's hits, built here."""
    out = []
    for hit in hits:
        content = f"{hit.title} {hit.text}" if hit.title else hit.text
        metadata = {**hit.metadata, "id": hit.id, "score": hit.score, "title": hit.title}
        out.append((hit.id, content, metadata))
    return out


def got(documents: list[Any]) -> list[tuple[str | None, str, dict[str, Any]]]:
    return [(d.id, d.page_content, d.metadata) for d in documents]


def test_the_retriever_returns_the_engines_hits(lc: ModuleType, engine: HybridIndex) -> None:
    retriever = lc.HybridRetriever(engine=engine)
    for query in QUERIES:
        docs = retriever.invoke(query)
        assert len(docs) == lc.DEFAULT_K == 4
        assert got(docs) == expected(engine.search(query, 4).hits()[0])
        assert docs[0].page_content.startswith(docs[0].metadata["title"] + " ")


def test_the_retriever_passes_search_options(lc: ModuleType, engine: HybridIndex) -> None:
    where = {"group": {"$in": [1, 2]}, "lang": {"$ne": "fr"}}
    options = {"k": 6, "filter": where, "fusion": "rrf", "weights": {"dense": 2.0}}
    retriever = lc.HybridRetriever(engine=engine, search_kwargs=options)
    for query in QUERIES:
        docs = retriever.invoke(query)
        assert got(docs) == expected(engine.search(query, **options).hits()[0])
        assert all(d.metadata["group"] in (1, 2) and d.metadata["lang"] != "fr" for d in docs)
    # keyword arguments of invoke override search_kwargs for one call
    docs = retriever.invoke(QUERIES[0], k=2, mmr=0.5)
    assert got(docs) == expected(
        engine.search(QUERIES[0], **{**options, "k": 2, "mmr": 0.5}).hits()[0]
    )


def test_the_retriever_refuses_unknown_options(lc: ModuleType, engine: HybridIndex) -> None:
    with pytest.raises(ValueError, match=r"'top_k', which is no HybridIndex\.search option"):
        lc.HybridRetriever(engine=engine, search_kwargs={"top_k": 3})
    with pytest.raises(ValueError, match="engine"):
        lc.HybridRetriever(engine="not an engine")
    with pytest.raises(ValueError, match=r"no HybridIndex\.search option"):
        lc.HybridRetriever(engine=engine).invoke("cat", top_k=3)


def test_the_vector_store_searches_as_the_engine(lc: ModuleType, engine: HybridIndex) -> None:
    store = lc.HybridVectorStore(engine)
    where = {"group": {"$gte": 2}}
    for query in QUERIES:
        hits = engine.search(query, 5, filter=where).hits()[0]
        assert got(store.similarity_search(query, k=5, filter=where)) == expected(hits)
        scored = store.similarity_search_with_score(query, k=5, filter=where)
        assert [s for _, s in scored] == [h.score for h in hits]
        assert got([d for d, _ in scored]) == expected(hits)
        retriever = store.as_retriever(search_kwargs={"k": 5, "filter": where})
        assert got(retriever.invoke(query)) == expected(hits)
        assert got(store.similarity_search(query)) == expected(engine.search(query, 4).hits()[0])


def test_mmr_through_the_vector_store(lc: ModuleType, engine: HybridIndex) -> None:
    store = lc.HybridVectorStore(engine)
    retriever = store.as_retriever(
        search_type="mmr", search_kwargs={"k": 3, "fetch_k": 10, "lambda_mult": 0.3}
    )
    for query in QUERIES:
        hits = engine.search(query, 3, mmr=0.3, mmr_candidates=10).hits()[0]
        assert got(retriever.invoke(query)) == expected(hits)


def test_a_score_threshold_compares_the_engines_relevance(
    lc: ModuleType, engine: HybridIndex
) -> None:
    import asyncio

    store = lc.HybridVectorStore(engine)
    retriever = store.as_retriever(
        search_type="similarity_score_threshold",
        search_kwargs={"k": 10, "score_threshold": 0.5},
    )
    for query in QUERIES:
        whole = engine.search(query, 10)
        assert whole.relevance is not None
        passing = [h for h, r in zip(whole.hits()[0], whole.relevance[0]) if r >= 0.5]
        assert got(retriever.invoke(query)) == expected(passing)
        scored = store.similarity_search_with_relevance_scores(query, k=10)
        assert [s for _, s in scored] == [float(r) for r in whole.relevance[0] if r >= 0]
        assert got(asyncio.run(retriever.ainvoke(query))) == expected(passing)


def test_add_documents_and_delete_change_the_live_index(
    lc: ModuleType, engine: HybridIndex
) -> None:
    from langchain_core.documents import Document

    store = lc.HybridVectorStore(engine)
    before = {d["_id"] for d in live_documents(engine)}
    added = [
        Document(page_content="zebra stripes on the savanna", metadata={"group": 9}, id="z1"),
        Document(page_content="zebra herds cross the river", metadata={"group": 9}),
    ]
    ids = store.add_documents(added)
    assert ids[0] == "z1" and ids[1] != "z1" and len(ids[1]) == 36  # a UUID4 string
    live = {d["_id"]: d for d in live_documents(engine)}  # committed: visible at once
    assert set(live) == before | set(ids)
    assert [live[i]["text"] for i in ids] == [d.page_content for d in added]
    assert all(live[i]["metadata"] == {"group": 9} and live[i]["title"] == "" for i in ids)
    found = store.similarity_search("zebra", k=2, filter={"group": 9})
    assert {d.id for d in found} == set(ids)
    assert got(found) == expected(engine.search("zebra", 2, filter={"group": 9}).hits()[0])
    assert {d.page_content for d in found} == {d.page_content for d in added}  # no title

    # the same id again replaces the document (an upsert)
    store.add_texts(["zebra foals"], [{"group": 8}], ids=["z1"])
    live = {d["_id"]: d for d in live_documents(engine)}
    assert set(live) == before | set(ids) and live["z1"]["text"] == "zebra foals"

    assert store.delete(["z1", "d3"]) is True
    assert {d["_id"] for d in live_documents(engine)} == (before | set(ids)) - {"z1", "d3"}
    assert "z1" not in {d.id for d in store.similarity_search("zebra", k=40)}
    with pytest.raises(KeyError, match="z1"):
        store.delete(["z1"])
    store.delete(["z1"], missing_ok=True)
    with pytest.raises(ValueError, match="give the ids"):
        store.delete()


def test_add_texts_refuses_bad_input(lc: ModuleType, engine: HybridIndex) -> None:
    store = lc.HybridVectorStore(engine)
    with pytest.raises(ValueError, match=r"\['score'\]"):
        store.add_texts(["a fox"], [{"score": 1.0}])
    with pytest.raises(ValueError, match="2 texts but 1 ids"):
        store.add_texts(["a fox", "a hen"], ids=["x"])
    with pytest.raises(ValueError, match="2 texts but 1 metadatas"):
        store.add_texts(["a fox", "a hen"], [{}])
    assert len(engine) == 30  # nothing staged or committed
    with pytest.raises(TypeError, match="HybridIndex"):
        lc.HybridVectorStore("not an engine")


def test_from_texts(lc: ModuleType) -> None:
    texts = ["the cat sat on the mat", "a dog in the river", "snow on the hill"]
    metadatas = [{"n": 0}, {"n": 1}, {"n": 2}]
    store = lc.HybridVectorStore.from_texts(
        texts, metadatas=metadatas, ids=["a", "b", "c"], encoder=HashingEncoder()
    )
    assert store.embeddings is None
    assert [d["_id"] for d in live_documents(store.engine)] == ["a", "b", "c"]
    docs = store.similarity_search("cat mat", k=3, filter={"n": {"$lt": 2}})
    assert got(docs) == expected(
        store.engine.search("cat mat", 3, filter={"n": {"$lt": 2}}).hits()[0]
    )
    assert docs[0].id == "a" and docs[0].page_content == texts[0]
    with pytest.raises(TypeError, match="embedding=None"):
        lc.HybridVectorStore.from_texts(texts, object())
    with pytest.raises(ValueError, match="at least one text"):
        lc.HybridVectorStore.from_texts([], encoder=HashingEncoder())


def test_get_by_ids_returns_the_committed_documents(lc: ModuleType, engine: HybridIndex) -> None:
    store = lc.HybridVectorStore(engine)
    store.delete(["d4"])
    asked = ["d7", "missing", "d4", "d0"]  # d4 is deleted: skipped like an unknown id
    for docs in (store.get_by_ids(asked), asyncio.run(store.aget_by_ids(asked))):
        assert [d.id for d in docs] == ["d7", "d0"]
        for doc in docs:
            source = document(int(doc.id[1:]))
            assert doc.page_content == f"{source['title']} {source['text']}"
            score = doc.metadata.pop("score")
            assert math.isnan(score)
            assert doc.metadata == {**source["metadata"], "id": doc.id, "title": source["title"]}
    assert store.get_by_ids([]) == [] and store.get_by_ids(["missing"]) == []
    with pytest.raises(TypeError, match=r"ids\[0\] is bool"):
        store.get_by_ids([True])
