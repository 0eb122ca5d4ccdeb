"""The LlamaIndex retriever returns exactly the engine's hits through ``retrieve``, and
``to_engine_filter`` means what LlamaIndex's filters mean: operator by operator, the
documents the engine keeps equal those LlamaIndex's own in-memory filter
(``build_metadata_filter_fn``, the ``SimpleVectorStore``'s) keeps, over scalar fields with
missing and ``None`` values and over list fields for the list operators.

The framework is imported in fixtures, so a missing ``llamaindex`` extra is a skip here and
a failure under CI (tests/conftest.py)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
from dense_oracle import HashingEncoder
from live_oracle import WORDS

from hybrid_engine import HybridIndex

N = 40
QUERY = "cat river stone"


@pytest.fixture(scope="module")
def li() -> ModuleType:
    """``llama_index.core.vector_stores``, or a skip when llama-index-core is absent."""
    return pytest.importorskip(
        "llama_index.core.vector_stores", reason="the llamaindex extra is not installed"
    )


@pytest.fixture(scope="module")
def adapter(li: ModuleType) -> ModuleType:
    from hybrid_engine.integrations import llamaindex

    return llamaindex


def metadata(i: int) -> dict[str, Any]:
    """Scalar fields missing (``lang`` for i % 5 == 0) or None (i % 5 == 1), numbers both
    int and float, and a list field, sometimes empty, sometimes missing."""
    record: dict[str, Any] = {"year": 2015 + i % 8 if i % 6 else 2018.5}
    if i % 5 == 1:
        record["lang"] = None
    elif i % 5:
        record["lang"] = ["en", "fr", "de"][i % 3]
    if i % 7:
        record["tags"] = [WORDS[(i * j) % len(WORDS)] for j in range(i % 4)]
    return record


CORPUS = [
    {
        "_id": f"d{i}",
        "title": WORDS[i % len(WORDS)] if i % 3 else "",
        "text": " ".join(WORDS[(i * 5 + j) % len(WORDS)] for j in range(4)),
        "metadata": metadata(i),
    }
    for i in range(N)
]


@pytest.fixture(scope="module")
def engine() -> HybridIndex:
    return HybridIndex.build(CORPUS, retrievers=("bm25", "dense"), encoder=HashingEncoder())


def llama_keeps(li: ModuleType, filters: Any) -> set[str]:
    """The ids LlamaIndex's own filter keeps; nested filters by its AND/OR/NOT rules."""
    from llama_index.core.vector_stores.utils import build_metadata_filter_fn

    def keeps(f: Any, record: dict[str, Any]) -> bool:
        if isinstance(f, li.MetadataFilter):
            one = li.MetadataFilters(filters=[f])
            return build_metadata_filter_fn(lambda _: record, one)("")
        results = [keeps(g, record) for g in f.filters]
        condition = f.condition or li.FilterCondition.AND
        if condition == li.FilterCondition.AND:
            return all(results)
        if condition == li.FilterCondition.OR:
            return any(results)
        return not any(results)

    return {doc["_id"] for doc in CORPUS if keeps(filters, doc["metadata"])}


def engine_keeps(engine: HybridIndex, where: dict[str, Any]) -> set[str]:
    """Every id the engine's search keeps under ``where`` (k = the whole corpus: the exact
    dense leg returns each allowed document)."""
    return set(engine.search(QUERY, N, filter=where).doc_ids[0])


def leaf_cases(li: ModuleType) -> list[tuple[Any, dict[str, Any]]]:
    op, f = li.FilterOperator, li.MetadataFilter
    return [
        (f(key="lang", value="en"), {"lang": {"$eq": "en"}}),
        (f(key="lang", value="en", operator=op.NE), {"lang": {"$ne": "en"}}),
        (f(key="year", value=2018, operator=op.GT), {"year": {"$gt": 2018}}),
        (f(key="year", value=2018, operator=op.GTE), {"year": {"$gte": 2018}}),
        (f(key="year", value=2018.5, operator=op.LT), {"year": {"$lt": 2018.5}}),
        (f(key="year", value=2018, operator=op.LTE), {"year": {"$lte": 2018}}),
        (f(key="lang", value="de", operator=op.GT), {"lang": {"$gt": "de"}}),
        (f(key="lang", value=["en", "de"], operator=op.IN), {"lang": {"$in": ["en", "de"]}}),
        (f(key="year", value=[2015, 2018.5], operator=op.IN), {"year": {"$in": [2015, 2018.5]}}),
        (f(key="lang", value=["en"], operator=op.NIN), {"lang": {"$nin": ["en"]}}),
        (f(key="tags", value="cat", operator=op.CONTAINS), {"tags": {"$eq": "cat"}}),
        (f(key="tags", value=["cat", "dog"], operator=op.ANY), {"tags": {"$in": ["cat", "dog"]}}),
        (
            f(key="tags", value=["cat", "bird"], operator=op.ALL),
            {"$and": [{"tags": {"$eq": "cat"}}, {"tags": {"$eq": "bird"}}]},
        ),
    ]


def test_each_operator_keeps_what_llamaindex_keeps(
    li: ModuleType, adapter: ModuleType, engine: HybridIndex
) -> None:
    for leaf, translated in leaf_cases(li):
        filters = li.MetadataFilters(filters=[leaf])
        where = adapter.to_engine_filter(filters)
        assert where == {"$and": [translated]}, leaf
        kept = llama_keeps(li, filters)
        assert 0 < len(kept) < N, leaf  # each case splits the corpus
        assert engine_keeps(engine, where) == kept, leaf


def test_conditions_and_nesting(li: ModuleType, adapter: ModuleType, engine: HybridIndex) -> None:
    cases = leaf_cases(li)
    cond = li.FilterCondition
    inner = li.MetadataFilters(filters=[cases[2][0], cases[10][0]], condition=cond.OR)
    for condition in (cond.AND, cond.OR, cond.NOT, None):
        filters = li.MetadataFilters(filters=[cases[7][0], inner], condition=condition)
        where = adapter.to_engine_filter(filters)
        parts = [cases[7][1], {"$or": [cases[2][1], cases[10][1]]}]
        if condition == cond.NOT:
            assert where == {"$not": {"$or": parts}}
        else:
            assert where == {"$or" if condition == cond.OR else "$and": parts}
        assert engine_keeps(engine, where) == llama_keeps(li, filters), condition
    assert adapter.to_engine_filter(li.MetadataFilters(filters=[])) == {}


def test_untranslatable_filters_raise(li: ModuleType, adapter: ModuleType) -> None:
    op, f = li.FilterOperator, li.MetadataFilter

    def translate(one: Any) -> dict[str, Any]:
        return adapter.to_engine_filter(li.MetadataFilters(filters=[one]))

    for operator in (op.TEXT_MATCH, op.TEXT_MATCH_INSENSITIVE, op.IS_EMPTY):
        with pytest.raises(ValueError, match=f"FilterOperator.{operator.name} "):
            translate(f(key="lang", value="en", operator=operator))
    with pytest.raises(ValueError, match="value None"):
        translate(f(key="lang", value=None))
    with pytest.raises(ValueError, match="ALL on key 'tags' has no values"):
        translate(f(key="tags", value=[], operator=op.ALL))
    with pytest.raises(TypeError, match="takes one value"):
        translate(f(key="lang", value=["en"]))
    with pytest.raises(TypeError, match="takes a list of values"):
        translate(f(key="lang", value="en", operator=op.IN))
    with pytest.raises(TypeError, match="MetadataFilters"):
        adapter.to_engine_filter({"lang": "en"})
    nested = li.MetadataFilters(
        filters=[li.MetadataFilters(filters=[f(key="t", value="x", operator=op.TEXT_MATCH)])]
    )
    with pytest.raises(ValueError, match="TEXT_MATCH"):
        adapter.to_engine_filter(nested)


def nodes(retrieved: list[Any]) -> list[tuple[str, str, dict[str, Any], float | None]]:
    return [(n.node.id_, n.node.text, n.node.metadata, n.score) for n in retrieved]


def expected(hits: list[Any]) -> list[tuple[str, str, dict[str, Any], float | None]]:
    """The nodes the retriever must return for the engine's hits, built here."""
    return [
        (
            h.id,
            f"{h.title} {h.text}" if h.title else h.text,
            {**h.metadata, "title": h.title},
            h.score,
        )
        for h in hits
    ]


def test_the_retriever_returns_the_engines_hits(
    li: ModuleType, adapter: ModuleType, engine: HybridIndex
) -> None:
    retriever = adapter.HybridRetriever(engine)
    got = retriever.retrieve(QUERY)
    assert len(got) == adapter.DEFAULT_TOP_K == 2
    assert nodes(got) == expected(engine.search(QUERY, 2).hits()[0])
    shown = got[0].node.get_content(metadata_mode="llm")  # what an LLM reads: no title twice
    assert "year: " in shown and "title: " not in shown

    filters = li.MetadataFilters(
        filters=[li.MetadataFilter(key="year", value=2018, operator=li.FilterOperator.GTE)]
    )
    options = {"fusion": "rrf", "weights": {"dense": 2.0}, "mmr": 0.5}
    retriever = adapter.HybridRetriever(engine, similarity_top_k=5, filters=filters, **options)
    where = {"year": {"$gte": 2018}}
    hits = engine.search(QUERY, 5, filter=where, **options).hits()[0]
    assert nodes(retriever.retrieve(QUERY)) == expected(hits)
    # a filter in the engine's own dialect passes through
    retriever = adapter.HybridRetriever(engine, similarity_top_k=5, filters=where, **options)
    assert nodes(retriever.retrieve(QUERY)) == expected(hits)


def test_the_retriever_refuses_bad_arguments(
    li: ModuleType, adapter: ModuleType, engine: HybridIndex
) -> None:
    with pytest.raises(ValueError, match=r"'top_k', which is no HybridIndex\.search option"):
        adapter.HybridRetriever(engine, top_k=3)
    with pytest.raises(ValueError, match="may not set 'k'"):
        adapter.HybridRetriever(engine, k=3)
    with pytest.raises(TypeError, match="HybridIndex"):
        adapter.HybridRetriever("not an engine")
    with pytest.raises(TypeError, match="filters must be"):
        adapter.HybridRetriever(engine, filters=[("lang", "en")])
    with pytest.raises(ValueError, match="IS_EMPTY"):
        adapter.HybridRetriever(
            engine,
            filters=li.MetadataFilters(
                filters=[li.MetadataFilter(key="lang", value="", operator="is_empty")]
            ),
        )
    with pytest.raises(ValueError, match="gtee"):
        adapter.HybridRetriever(engine, filters={"year": {"$gtee": 3}})
