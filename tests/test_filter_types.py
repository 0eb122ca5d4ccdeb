"""A filter comparing a field with a value of another type than the index holds in it is a
TypeError naming the field, its type in the index and the value's (issue 24, defect 8), through
every search that takes a filter; ints and floats are both numbers, None and ``$exists`` go with
every field, and a field no live document holds still matches as an empty one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dense_oracle import HashingEncoder
from sparse_oracle import HashingSparseEncoder

from hybrid_engine import HybridIndex, ParentDocumentIndex
from hybrid_engine.chunking import Chunker
from hybrid_engine.metadata import Filter

WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()


def metadata(i: int) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "year": 2000 + i if i % 4 else 2000.5 + i,  # ints and floats: numbers
        "lang": ["en", "fr"][i % 2],
        "draft": i % 3 == 0,
        "tags": ["ml", "ir"][: i % 3],
        "code": i if i % 2 else f"c{i}",  # mixed: int and str
        "note": None,  # only None
    }
    if i == 5:
        meta["gone"] = "x"  # held by a document deleted below
    return meta


CORPUS = [
    {
        "_id": f"d{i}",
        "text": " ".join(WORDS[(i * 7 + j) % 15] for j in range(4)),
        "metadata": metadata(i),
    }
    for i in range(12)
]
QUERIES = ["cat mat", "river stone", "moon"]


def build(retrievers: tuple[str, ...]) -> HybridIndex:
    engine = HybridIndex.build(
        CORPUS[:8],
        retrievers=retrievers,
        encoder=HashingEncoder() if "dense" in retrievers else None,
        splade_encoder=HashingSparseEncoder() if "splade" in retrievers else None,
    )
    engine.add(CORPUS[8:])
    engine.delete(["d5"])
    engine.commit()
    return engine


@pytest.fixture(scope="module", params=[("bm25",), ("dense",), ("splade",)], ids=str)
def engine(request: pytest.FixtureRequest) -> HybridIndex:
    return build(request.param)


def matching(spec: dict[str, Any]) -> set[str]:
    """Brute force: the live documents whose metadata match ``spec`` (the mask of one)."""
    from hybrid_engine.metadata import MetadataColumns

    live = [doc for doc in CORPUS if doc["_id"] != "d5"]
    mask = Filter.compile(spec).mask(MetadataColumns.from_records([d["metadata"] for d in live]))
    return {doc["_id"] for doc, keep in zip(live, mask, strict=True) if keep}


@pytest.mark.parametrize(
    ("spec", "held", "given"),
    [
        ({"year": "2021"}, "int and float", "str"),
        ({"year": {"$gt": "a"}}, "int and float", "str"),
        ({"year": {"$ne": "2021"}}, "int and float", "str"),
        ({"year": {"$in": [2001, "2003"]}}, "int and float", "str"),
        ({"year": {"$nin": [True]}}, "int and float", "bool"),
        ({"lang": 3}, "str", "int"),
        ({"lang": {"$lt": 2.5}}, "str", "float"),
        ({"draft": 1}, "bool", "int"),
        ({"tags": 3}, "str", "int"),
        ({"code": False}, "int and str", "bool"),
        ({"$or": [{"lang": "en"}, {"year": "x"}]}, "int and float", "str"),
        ({"$not": {"year": {"$not": {"$lte": "x"}}}}, "int and float", "str"),
    ],
)
def test_a_value_of_another_type_is_refused(
    engine: HybridIndex, spec: dict[str, Any], held: str, given: str
) -> None:
    field = next(iter(spec)) if not next(iter(spec)).startswith("$") else "year"
    with pytest.raises(TypeError) as refused:
        engine.search(QUERIES, 5, filter=spec)
    message = str(refused.value)
    assert f"field {field!r} holds {held} values in the index" in message
    assert f"the {given} " in message


@pytest.mark.parametrize(
    "spec",
    [
        {"year": 2003.0},  # a float against ints: numbers
        {"year": {"$gte": 2004, "$lt": 2010.5}},
        {"lang": {"$in": ["en", "de"]}},
        {"draft": True},
        {"tags": "ml"},
        {"code": 3},
        {"code": "c4"},  # a mixed field takes either
        {"year": None},
        {"year": {"$exists": False}},
        {"note": 3},  # a field of None values only: nothing to compare with
        {"nope": "x"},  # no document holds it: matches nothing
        {"nope": {"$ne": "x"}},  # ... so its negation matches every document
        {"gone": 3},  # held only by a deleted document
    ],
)
def test_a_value_of_the_fields_type_matches_as_before(
    engine: HybridIndex, spec: dict[str, Any]
) -> None:
    result = engine.search(QUERIES, 20, filter=spec)
    found = {doc_id for row in result.doc_ids for doc_id in row}
    assert found <= matching(spec)
    if "dense" in engine.retrievers:  # every allowed document is a dense hit
        assert found == matching(spec)


def test_a_compiled_filter_is_checked_too() -> None:
    engine = build(("bm25",))
    with pytest.raises(TypeError, match="field 'year' holds int and float values"):
        engine.search(QUERIES, 5, filter=Filter.compile({"year": "2021"}))
    with pytest.raises(TypeError, match="field 'year'"):
        engine.pinned().search(QUERIES, 5, filter={"year": "2021"})


def test_parent_documents_check_the_parents_metadata(model_path: Path) -> None:
    from tokenizers import Tokenizer

    counter = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    index = ParentDocumentIndex.build(
        CORPUS, chunker=Chunker(counter, max_tokens=8, overlap_tokens=2), retrievers=("bm25",)
    )
    with pytest.raises(TypeError, match="field 'lang' holds str values in the index"):
        index.search(QUERIES, 3, filter={"lang": 1})
    assert index.search(QUERIES, 3, filter={"lang": "en"}).documents is not None
