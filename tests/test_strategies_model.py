"""Each strategy end to end with the real local generator (Gemma 3 270M, llama-cpp) on a few
SciFact-like queries over a small corpus: it runs, generates, parses and records what it did."""

from __future__ import annotations

import warnings

import pytest

from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.generation import load_generator
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.strategies import (
    MetadataSchema,
    SchemaField,
    SelfQueryWarning,
    decompose,
    fuse_strategies,
    hyde,
    multi_hop,
    self_query,
)

CORPUS = [
    {
        "_id": "a",
        "title": "Statins",
        "text": "Statins lower LDL cholesterol in adults.",
        "metadata": {"year": 2015, "type": "review"},
    },
    {
        "_id": "b",
        "title": "Vitamin D",
        "text": "Vitamin D supplements and fractures in women.",
        "metadata": {"year": 2008, "type": "article"},
    },
    {
        "_id": "c",
        "title": "Sleep",
        "text": "Short sleep raises the risk of obesity in children.",
        "metadata": {"year": 2020, "type": "letter"},
    },
]
QUERIES = ["Do statins reduce cholesterol?"]
SCHEMA = MetadataSchema(
    (
        SchemaField("year", "int", range=(2000, 2024)),
        SchemaField("type", "str", values=("article", "review", "letter")),
    )
)


@pytest.fixture(scope="module")
def engine() -> HybridIndex:
    return HybridIndex.build(CORPUS, encoder=Encoder.load())


@pytest.fixture(scope="module")
def generate():
    return load_generator("gemma3-270m", max_tokens=48)


def test_hyde(engine, generate) -> None:
    result = hyde(engine, QUERIES, generate, 3)
    assert result.traces[0].generated["hyde"]["raw"] and result.doc_ids[0][0] == "a"


def test_decompose(engine, generate) -> None:
    result = decompose(engine, QUERIES, generate, 3)
    asked = result.traces[0].generated["decompose"]["subqueries"]
    assert asked[0] == QUERIES[0] and len(asked) <= 4 and "a" in result.doc_ids[0]


def test_multi_hop(engine, generate) -> None:
    result = multi_hop(engine, QUERIES, generate, 3)
    assert 1 <= len(result.traces[0].steps) <= 2 and "a" in result.doc_ids[0]


def test_self_query(engine, generate) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SelfQueryWarning)
        result = self_query(
            engine, ["Statins and cholesterol (a review from 2015)"], generate, SCHEMA, 3
        )
    proposal = result.traces[0].generated["self-query"]
    assert proposal is not None and isinstance(proposal.valid, bool)
    assert result.timings["generation"] > 0


def test_fuse_strategies(engine, generate) -> None:
    result = fuse_strategies(engine, QUERIES, generate, ("hybrid", "hyde"), k=3)
    assert {s.strategy for s in result.traces[0].steps} == {"hybrid", "hyde"}
