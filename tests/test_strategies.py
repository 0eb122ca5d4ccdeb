"""Query strategies with a scripted generator: HyDE's dense query is the mean of normalised
embeddings, decomposition and multi-hop equal ``fuse`` applied by hand to the sub-searches,
self-query applies a valid filter and drops an invalid one, and the traces record it all."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from dense_oracle import HashingEncoder

from hybrid_engine import fuse
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.result import SearchResult
from hybrid_engine.strategies import (
    PROMPTS,
    MetadataSchema,
    Prompts,
    SchemaField,
    SelfQueryWarning,
    decompose,
    fuse_strategies,
    hyde,
    multi_hop,
    self_query,
)

WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()
TYPES = ("article", "review", "letter")
CORPUS = [
    {
        "_id": f"d{i}",
        "title": WORDS[i % 15],
        "text": " ".join(WORDS[(i * 7 + j) % 15] for j in range(5)),
        "metadata": {"year": 2000 + i % 25, "type": TYPES[i % 3]},
    }
    for i in range(60)
]
QUERIES = ["cat on the mat", "river stone", "snow and wind fire"]
SCHEMA = MetadataSchema(
    (
        SchemaField("year", "int", range=(2000, 2024)),
        SchemaField("type", "str", values=TYPES),
    )
)


@pytest.fixture(scope="module")
def engine() -> HybridIndex:
    return HybridIndex.build(CORPUS, encoder=HashingEncoder())


class Scripted:
    """A fake generator: the first rule whose key the prompt contains gives the output; the
    prompts it saw are kept."""

    def __init__(self, rules: dict[str, str], default: str = "") -> None:
        self.rules, self.default = rules, default
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        question = prompt.rsplit("Question:", 1)[-1]
        return next((out for key, out in self.rules.items() if key in question), self.default)


def _row(result: SearchResult, i: int) -> SearchResult:
    return SearchResult(result.ids[i : i + 1], result.scores[i : i + 1])


def _same(a: SearchResult, b: SearchResult) -> None:
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_allclose(a.scores, b.scores, rtol=1e-6)


def test_search_with_the_querys_own_vectors_equals_the_plain_search(engine) -> None:
    vectors = HashingEncoder().encode(QUERIES)
    _same(engine.search(QUERIES, 10, query_vectors=vectors), engine.search(QUERIES, 10))
    mixed = [QUERIES[0], "  ", QUERIES[1]]  # a blank query keeps no hits
    given = engine.search(mixed, 5, query_vectors=HashingEncoder().encode(["x", "y", "z"]))
    assert (given.ids[1] == -1).all()


@pytest.mark.parametrize(
    ("vectors", "error", "match"),
    [
        (np.zeros((3, 48), np.float64), TypeError, "float32"),
        (np.zeros((2, 48), np.float32), ValueError, r"\(3, 48\)"),
        ([[0.0] * 48] * 3, TypeError, "numpy array"),
        (np.full((3, 48), np.nan, np.float32), ValueError, "NaN"),
    ],
)
def test_bad_query_vectors(engine, vectors, error, match) -> None:
    with pytest.raises(error, match=match):
        engine.search(QUERIES, 5, query_vectors=vectors)


def test_query_vectors_need_the_dense_leg() -> None:
    bm25_only = HybridIndex.build(CORPUS, retrievers=("bm25",))
    with pytest.raises(ValueError, match="no dense leg"):
        bm25_only.search(["cat"], 5, query_vectors=np.zeros((1, 48), np.float32))


def test_hyde_dense_query_is_the_mean_of_normalised_embeddings(engine) -> None:
    generate = Scripted({"cat": "Passage: the dog sat\non the mat.\nQuestion: more"}, "fire snow")
    result = hyde(engine, QUERIES, generate, 10, num_passages=2)
    encoder = HashingEncoder()
    for i, query in enumerate(QUERIES):
        passages = result.traces[i].generated["hyde"]["passages"]
        assert len(passages) == 2
        embedded = encoder.encode([query, *passages]).astype(np.float64)
        mean = (embedded / np.linalg.norm(embedded, axis=1, keepdims=True)).mean(axis=0)
        expected = engine.search([query], 10, query_vectors=mean[None].astype(np.float32))
        _same(_row(result, i), expected)
    assert result.traces[0].generated["hyde"]["passages"][0] == "the dog sat on the mat."
    assert len(generate.prompts) == 2 * len(QUERIES)
    assert generate.prompts[0] == PROMPTS.hyde.format(question=QUERIES[0])


def test_hyde_with_nothing_generated_is_the_plain_search(engine) -> None:
    result = hyde(engine, QUERIES, Scripted({}, "  \n 12 \n"))
    _same(result, engine.search(QUERIES, 10))
    assert result.doc_ids == engine.search(QUERIES, 10).doc_ids


def test_decompose_equals_rrf_of_the_subqueries_by_hand(engine) -> None:
    generate = Scripted({"cat": " dog tree\n2. fish\n3. dog tree\n4. cat on the mat\n5. sun"})
    result = decompose(engine, QUERIES[:1], generate, 10, max_subqueries=2)
    asked = ["cat on the mat", "dog tree", "fish"]  # repeat and original dropped, capped at 2
    assert result.traces[0].generated["decompose"]["subqueries"] == asked
    lists = [engine.search([q], 100) for q in asked]
    _same(result, fuse(lists, 10, method="rrf", depth=100))
    labels = [step.label for step in result.traces[0].steps]
    assert labels == ["subquery-0", "subquery-1", "subquery-2"]
    sources = result.traces[0].sources()
    for doc_id in result.doc_ids[0]:
        expected = [
            f"decompose/subquery-{j}" for j, hits in enumerate(lists) if doc_id in hits.doc_ids[0]
        ]
        assert sources[doc_id] == expected


def test_multi_hop_fuses_the_hops_and_honours_the_limit(engine) -> None:
    first = multi_hop(engine, ["cat"], Scripted({}, "river stone\nmore text"), 10, max_hops=3)
    # hop 1 asks "river stone"; hop 2 would repeat it, which stops the hops
    record = first.traces[0].generated["multi-hop"]
    assert record["follow_ups"] == ["river stone"] and not record["stopped"]
    hops = [engine.search(["cat"], 100), engine.search(["river stone"], 100)]
    _same(first, fuse(hops, 10, method="rrf", depth=100))
    counting = Scripted({}, "fire")
    limited = multi_hop(engine, ["cat"], counting, 10, max_hops=2)
    assert len(counting.prompts) == 1 and len(limited.traces[0].steps) == 2


def test_multi_hop_stops_when_the_generator_says_enough(engine) -> None:
    generate = Scripted({}, "enough.")
    result = multi_hop(engine, QUERIES, generate, 10, max_hops=4)
    assert len(generate.prompts) == len(QUERIES)
    assert all(t.generated["multi-hop"]["stopped"] for t in result.traces)
    assert all(len(t.steps) == 1 for t in result.traces)
    plain = engine.search(QUERIES, 100)
    _same(result, fuse([plain], 10, method="rrf", depth=100))
    prompt = generate.prompts[0]
    top = engine.search(["cat on the mat"], 3).hits()[0]
    assert f"1. {top[0].title} {top[0].text}" in prompt and "ENOUGH" in prompt


def test_prompts_are_overridable(engine) -> None:
    generate = Scripted({}, "x")
    mine = Prompts(hyde="Q={question} P=")
    hyde(engine, ["cat"], generate, prompts=mine)
    decompose(
        engine, ["cat"], generate, prompts=dataclasses.replace(PROMPTS, decompose="D:{question}")
    )
    assert generate.prompts == ["Q=cat P=", "D:cat"]


def test_self_query_applies_a_valid_filter(engine) -> None:
    generate = Scripted({"cat": 'Filter: {"year": {"$gte": 2010}, "type": "review"} etc'})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = self_query(engine, ["cat"], generate, SCHEMA, 10)
    where = {"year": {"$gte": 2010}, "type": "review"}
    _same(result, engine.search(["cat"], 10, filter=where))
    proposal = result.traces[0].generated["self-query"]
    assert proposal.valid and proposal.spec == where
    assert all(h.metadata["type"] == "review" for h in result.hits()[0])
    assert "- type (str: one of article, review, letter)" in generate.prompts[0]


@pytest.mark.parametrize(
    ("output", "reason"),
    [
        ('{"year": 2010', "malformed JSON"),
        ("no filter here", "no JSON object"),
        ('{"colour": "red"}', "colour"),
        ('{"year": "twenty ten"}', "year"),
        ('{"type": "novel"}', "not an allowed value"),
        ('{"year": {"$gte": 1990}}', "not an allowed value"),
        ('{"year": {"$near": 3}}', r"\$near"),
    ],
)
def test_self_query_drops_an_invalid_filter(engine, output: str, reason: str) -> None:
    with pytest.warns(SelfQueryWarning, match=reason):
        result = self_query(engine, QUERIES[:2], Scripted({}, output), SCHEMA, 10)
    _same(result, engine.search(QUERIES[:2], 10))
    assert not result.traces[0].generated["self-query"].valid
    assert [s.label for s in result.traces[0].steps] == ["unfiltered"]


def test_fuse_strategies_equals_fuse_of_the_strategies(engine) -> None:
    generate = Scripted({}, "dog tree")
    names = ("hybrid", "hyde", "decompose")
    result = fuse_strategies(engine, QUERIES, generate, names, method="rrf", k=10)
    parts = [
        engine.search(QUERIES, 100),
        hyde(engine, QUERIES, generate, 100, depth=100),
        decompose(engine, QUERIES, generate, 100, depth=100),
    ]
    _same(result, fuse(parts, 10, method="rrf", depth=100))
    strategies = {step.strategy for step in result.traces[0].steps}
    assert strategies == set(names)
    assert set(result.traces[0].generated) == {"hyde", "decompose"}
    with pytest.raises(ValueError, match="schema"):
        fuse_strategies(engine, QUERIES, generate, ("self-query",))
    with pytest.raises(ValueError, match="distinct names"):
        fuse_strategies(engine, QUERIES, generate, ("hyde", "hyde"))


def test_timings_split_generation_and_retrieval(engine) -> None:
    result = decompose(engine, QUERIES, Scripted({}, "dog"), 5)
    for trace in result.traces:
        assert {"decompose.generation", "decompose.retrieval", "decompose.fusion"} <= set(
            trace.timings
        )
        assert all(ms >= 0 for ms in trace.timings.values())
        assert len(trace.steps) == 2 and all(step.ms >= 0 for step in trace.steps)
    assert {"generation", "retrieval", "total"} <= set(result.timings)
    blank = hyde(engine, ["", "cat"], Scripted({}, "dog"))
    assert "hyde.generation" not in blank.traces[0].timings
    assert (blank.ids[0] == -1).all()


def test_parsing_of_small_model_output() -> None:
    from hybrid_engine.strategies.parsing import clean_lines, follow_up, json_object, passage

    messy = '1. Statin trials\n2) statin   TRIALS\n- "LDL levels"\n\n  42 \n* a) \nQuestion: next'
    assert clean_lines(messy) == ["Statin trials", "LDL levels"]
    assert clean_lines("") == [] and passage("  \n ... ") == ""
    assert passage("Answer: Statins lower\n LDL.\nQuestion: why") == "Statins lower LDL."
    assert follow_up("ENOUGH, the passages answer it", "ENOUGH") is None
    assert follow_up("  2. LDL receptor genes\nmore", "ENOUGH") == "LDL receptor genes"
    assert json_object('x {"a": "}\\"", "b": {"c": 1}} {') == {"a": '}"', "b": {"c": 1}}
    with pytest.raises(ValueError, match="unbalanced"):
        json_object('{"a": 1')
