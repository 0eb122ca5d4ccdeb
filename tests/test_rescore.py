"""Rescoring by metadata: decays and expressions recomputed by numpy from Elasticsearch's
definitions over the unrescored ranking (every candidate's relevance and fields), pages of the
rescored ranking, and expressions that are not arithmetic refused before any search."""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

import numpy as np
import pytest
from live_oracle import QUERIES, document

from hybrid_engine import HybridIndex
from hybrid_engine.result import PAD_ID

N_DOCS = 60


def _document(i: int) -> dict[str, Any]:
    doc = document(i)
    doc["metadata"]["year"] = 2000 + (i * 7) % 25
    day = dt.date(2024, 1, 1) + dt.timedelta(days=(i * 11) % 300)
    doc["metadata"]["date"] = day.isoformat()
    if i % 9 == 0:
        del doc["metadata"]["year"]
    return doc


DOCS = [_document(i) for i in range(N_DOCS)]


@pytest.fixture(scope="module")
def engine() -> HybridIndex:
    return HybridIndex.build(DOCS, retrievers=("bm25",))


def _factor(
    x: float | None, origin: float, scale: float, offset: float, decay: float, how: str
) -> float:
    """Elasticsearch's decay functions, written out."""
    if x is None:
        return 1.0
    d = max(0.0, abs(x - origin) - offset)
    if how == "linear":
        s = scale / (1 - decay)
        return max(0.0, (s - d) / s)
    if how == "exp":
        return math.exp(math.log(decay) / scale * d)
    sigma2 = -(scale**2) / (2 * math.log(decay))
    return math.exp(-(d**2) / (2 * sigma2))


def _rescored(engine: HybridIndex, query: str, value: Any) -> list[tuple[str, float]]:
    """Every candidate of the unrescored ranking with ``value(relevance, document)``, sorted
    by it, ties in relevance order."""
    whole = engine.search(query, N_DOCS)
    assert whole.relevance is not None
    by_id = {doc["_id"]: doc for doc in DOCS}
    scored = [
        (hit.id, value(float(r), by_id[hit.id]))
        for hit, r in zip(whole.hits()[0], whole.relevance[0], strict=False)
    ]
    return sorted(scored, key=lambda pair: -pair[1])  # stable: ties keep relevance order


@pytest.mark.parametrize("function", ["linear", "exp", "gauss"])
def test_a_numeric_decay_is_elasticsearchs(engine: HybridIndex, function: str) -> None:
    decay = {"field": "year", "origin": 2020, "scale": 4, "offset": 1, "decay": 0.3}
    for query in QUERIES:
        expected = _rescored(
            engine,
            query,
            lambda r, doc: r * _factor(doc["metadata"].get("year"), 2020, 4, 1, 0.3, function),
        )
        got = engine.search(query, 10, decay={**decay, "function": function})
        assert got.doc_ids[0] == [doc_id for doc_id, _ in expected[:10]]
        assert np.allclose(got.scores[0][: len(expected[:10])], [s for _, s in expected[:10]])


def test_a_date_decay_counts_days(engine: HybridIndex) -> None:
    origin = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)

    def days(doc: dict[str, Any]) -> float:
        moment = dt.datetime.fromisoformat(doc["metadata"]["date"]).replace(tzinfo=dt.UTC)
        return (moment - origin).total_seconds() / 86400

    decay = {"field": "date", "origin": "2024-06-01", "scale": 30, "function": "exp"}
    expected = _rescored(
        engine, QUERIES[1], lambda r, doc: r * _factor(days(doc), 0, 30, 0, 0.5, "exp")
    )
    got = engine.search(QUERIES[1], 8, decay=decay)
    assert got.doc_ids[0] == [doc_id for doc_id, _ in expected[:8]]
    recent = engine.search(QUERIES[1], 3, decay={**decay, "origin": "now"})
    assert len(recent.doc_ids[0]) == 3


def test_an_expression_over_the_relevance_and_fields(engine: HybridIndex) -> None:
    formula = "score * decay + 0.05 * log(1 + group) - max(0, year - 2020) / 100"
    decay = {"field": "year", "origin": 2010, "scale": 10, "function": "linear"}

    def value(r: float, doc: dict[str, Any]) -> float:
        meta = doc["metadata"]
        factor = _factor(meta.get("year"), 2010, 10, 0, 0.5, "linear")
        return (
            r * factor
            + 0.05 * math.log(1 + meta["group"])
            - max(0, meta.get("year", 0) - 2020) / 100
        )

    for query in QUERIES:
        expected = _rescored(engine, query, value)
        got = engine.search(query, 10, decay=decay, expression=formula)
        assert got.doc_ids[0] == [doc_id for doc_id, _ in expected[:10]]
        assert np.allclose(
            got.scores[0][: len(expected[:10])], [s for _, s in expected[:10]], atol=1e-6
        )
        assert got.relevance is not None  # the fused relevance, kept
        assert np.all(got.relevance[0][got.ids[0] != PAD_ID] <= 1)


def test_pages_of_a_rescored_ranking(engine: HybridIndex) -> None:
    options: dict[str, Any] = {"decay": {"field": "year", "origin": 2012, "scale": 3}}
    deep = engine.search(QUERIES, 20, **options)
    page = engine.search(QUERIES, 5, offset=10, **options)
    assert np.array_equal(page.ids, deep.ids[:, 10:15])


@pytest.mark.parametrize(
    ("decay", "problem"),
    [
        ({"field": "year", "origin": 2020}, "takes field, origin and scale"),
        ({"field": "year", "origin": 2020, "scale": 0}, "scale must be a finite number > 0"),
        ({"field": "year", "origin": 2020, "scale": 2, "decay": 1.0}, r"in \(0, 1\)"),
        ({"field": "year", "origin": 2020, "scale": 2, "function": "cosine"}, "function must"),
        ({"field": "date", "origin": "June", "scale": 2}, "not an ISO-8601 date"),
        ({"field": "year", "origin": 2020, "scale": 2, "weight": 3}, "takes field, origin"),
    ],
)
def test_bad_decays_are_refused(engine: HybridIndex, decay: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        engine.search(QUERIES, 5, decay=decay)


@pytest.mark.parametrize(
    "expression",
    [
        "__import__('os').system('true')",
        "score.real",
        "score if year else 0",
        "score > 0.5",
        "(lambda: 1)()",
        "print(score)",
        "year[0]",
        "'a' + score",
        "log",
        "max()",
    ],
)
def test_expressions_that_are_not_arithmetic_are_refused(
    engine: HybridIndex, expression: str
) -> None:
    with pytest.raises(ValueError, match="expression"):
        engine.search(QUERIES, 5, expression=expression)


def test_a_non_finite_expression_names_the_document(engine: HybridIndex) -> None:
    with pytest.raises(ValueError, match=r"gives -?inf for document 'd\d+'"):
        engine.search(QUERIES, 5, expression="log(score * 0)")
    with pytest.raises(TypeError, match="'lang' holds"):
        engine.search(QUERIES, 5, expression="score + lang")


def test_the_server_and_the_command_line_rescore(engine: HybridIndex, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    import json

    from cli_process import error_line, ok
    from fastapi.testclient import TestClient

    from hybrid_engine.server import create_app

    decay = {"field": "year", "origin": 2018, "scale": 2, "function": "exp"}
    expected = engine.search(QUERIES, 5, decay=decay, expression="score * decay").doc_ids
    http = TestClient(create_app(engine))
    body = {"queries": QUERIES, "k": 5, "decay": decay, "expression": "score * decay"}
    answer = http.post("/search", json=body)
    assert answer.status_code == 200, answer.text
    assert [[h["id"] for h in r["hits"]] for r in answer.json()["results"]] == expected
    refused = http.post("/search", json={"query": "cat", "expression": "score.real"})
    assert refused.status_code == 400 and "expression" in refused.text

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(doc) + "\n" for doc in DOCS))
    ok("index", corpus, tmp_path / "index", "--retrievers", "bm25", "--quiet")
    line = ok(
        "search", tmp_path / "index", QUERIES[0], "-k", "5", "--decay", json.dumps(decay), "--json"
    )
    assert [hit["id"] for hit in json.loads(line)["hits"]] == expected[0]
    problem = error_line("search", tmp_path / "index", "cat", "--decay", "[1]")
    assert "argument --decay: expected a JSON object" in problem
