"""One contract for every index kind (issue 30): the same scenario (build, search with the
options every kind runs, mutations, commit, reload, reads by id) against ``HybridIndex``,
``ParentDocumentIndex`` and a one-shard and a two-shard ``ShardedIndex``, over the same
documents and models; their answers must agree.

The documents are short (one chunk each), so a parent index ranks its parents as the plain
index ranks its documents. Every kind encodes with the prepared bi-encoder (the shards load it
in their actors) and shares the embedding cache."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from hybrid_engine import EmbeddingCache, HybridIndex, ParentDocumentIndex, Stack
from hybrid_engine.chunking import Chunker
from hybrid_engine.distributed import ShardedIndex
from hybrid_engine.errors import UnknownIdError
from hybrid_engine.evaluation import load_beir

pytestmark = pytest.mark.slow

N_DOCS = 150
KINDS = ("hybrid", "parents", "shards-1", "shards-2")
PARENTS_ALIKE = ("default", "filter", "min_score", "vectors", "decay", "expression")
"""The searches whose answers a parent index shares with the others. Its options apply to the
ranking of the chunks, retrieved ``chunk_depth`` deep (100 here) to rank parents from: so a
``depth`` under that, a page (its legs search ``offset + chunk_depth`` deep) and MMR
(diversifying the chunks before they are grouped) rank otherwise, by design."""


@pytest.fixture(scope="module")
def data(shared_data: Path) -> dict[str, Any]:
    """Short SciFact documents (one sentence-sized text each) with metadata, more to add,
    and queries."""
    dataset = load_beir(shared_data / "beir" / "scifact", split="test")
    rng = np.random.default_rng(3)

    def short(doc: dict[str, Any], year: int) -> dict[str, Any]:
        return {
            "_id": doc["_id"],
            "title": doc["title"],
            "text": doc["text"][:240].strip(),  # as its one chunk holds it
            "metadata": {"year": year, "tag": str(rng.choice(["a", "b"]))},
        }

    corpus = [short(doc, int(rng.integers(2000, 2024))) for doc in dataset.corpus[:N_DOCS]]
    extra = [short(doc, 2030) for doc in dataset.corpus[N_DOCS : N_DOCS + 20]]
    return {"corpus": corpus, "extra": extra, "queries": list(dataset.queries.values())[:20]}


Opened = Callable[[], Any]


def _build(kind: str, corpus: list[dict[str, Any]], path: Path, chunker: Chunker) -> Opened:
    """Build ``kind`` over ``corpus`` at ``path``; returns how to open it again."""
    cache: dict[str, Any] = {"embedding_cache": EmbeddingCache()}
    if kind == "hybrid":
        with HybridIndex.build(corpus, **cache) as built:
            built.save(path)
        return lambda: HybridIndex.load(path)
    if kind == "parents":
        with ParentDocumentIndex.build(corpus, chunker=chunker, **cache) as parents:
            parents.save(path)
        return lambda: ParentDocumentIndex.load(path, chunker=chunker)
    shards = int(kind.split("-")[1])
    ShardedIndex.build(
        corpus, path, n_shards=shards, build_options={"embedding_cache": True}
    ).close()
    return lambda: ShardedIndex.open(path)


def _answer(result: Any) -> dict[str, Any]:
    """A result through the accessors every kind has: ``hits()`` (id, score, title, text,
    metadata), checked against ``doc_ids`` and ``scores``, and ``highlights()``; then its
    facet counts and each hit's places in the legs (``explain()``), where its kind has
    them (a parent index ranks parents from chunks: neither)."""
    rows = [
        [(hit.id, float(hit.score), hit.title, hit.text, dict(hit.metadata)) for hit in row]
        for row in result.hits()
    ]
    assert result.doc_ids == [[hit[0] for hit in row] for row in rows]
    for row, scores in zip(rows, result.scores, strict=True):
        np.testing.assert_array_equal(scores[np.isfinite(scores)], [hit[1] for hit in row])
    assert isinstance(result.timings, dict) and "total" in result.timings
    assert result.degraded == [] and result.skipped == []
    explain = getattr(result, "explain", None)
    return {
        "rows": rows,
        "highlights": result.highlights(),
        "facets": getattr(result, "facets", None),
        "explain": explain() if explain is not None else None,
    }


def _assert_agree(got: dict[str, Any], expected: dict[str, Any], kind: str) -> None:
    assert got["highlights"] == expected["highlights"], kind
    if not kind.startswith("parents"):
        assert got["facets"] == expected["facets"], kind
        for places_got, places_expected in zip(got["explain"], expected["explain"], strict=True):
            assert places_got == places_expected, kind
    for row_got, row_expected in zip(got["rows"], expected["rows"], strict=True):
        assert [h[0] for h in row_got] == [h[0] for h in row_expected], kind
        np.testing.assert_allclose(
            [h[1] for h in row_got], [h[1] for h in row_expected], rtol=1e-5, err_msg=kind
        )
        assert [h[2:] for h in row_got] == [h[2:] for h in row_expected], kind


def _searches(index: Any, queries: list[str], vectors: np.ndarray) -> dict[str, Any]:
    """The searches of the scenario: every option the four kinds run."""
    stack = Stack(retrievers=("bm25", "dense"), fusion="rrf", weights={"dense": 2.0}, depth=40)
    decay = {"field": "year", "origin": 2024, "scale": 4, "decay": 0.5, "function": "exp"}
    return {
        name: _answer(index.search(queries, 5, **options))
        for name, options in {
            "default": {"budget_ms": 60_000.0},  # no stage skipped: as without a budget
            "fusion": {"fusion": "combsum", "weights": {"bm25": 0.5}, "depth": 30},
            "stack": {"stack": stack},
            "filter": {
                "filter": {"$or": [{"year": {"$gte": 2015}}, {"tag": "b"}]},
                "strict": True,
                "num_threads": 1,
            },
            "page": {"offset": 5},
            "min_score": {"min_score": 0.3},
            "mmr": {"mmr": 0.6, "mmr_candidates": 15},
            "vectors": {"query_vectors": vectors},
            "facets": {"facets": ["tag", "year"], "filter": {"year": {"$gte": 2010}}},
            "decay": {"decay": decay, "min_score": 0.2},
            "expression": {"expression": "score * decay + 0.001 * year", "decay": decay},
        }.items()
    }


def test_every_kind_answers_the_same_scenario_alike(
    cluster: None, data: dict[str, Any], tmp_path: Path, model_path: Path
) -> None:
    corpus, extra, queries = data["corpus"], data["extra"], data["queries"]
    chunker = Chunker.load()
    vectors = None
    answers: dict[str, dict[str, Any]] = {}
    after: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        opened = _build(kind, corpus, tmp_path / kind, chunker)
        index = opened()
        try:
            if vectors is None:
                # Other queries' vectors: the dense leg must search these, not the texts.
                vectors = index.encoder.encode(queries[::-1])
            assert len(index) == N_DOCS
            answers[kind] = _searches(index, queries, vectors)
            awaited = asyncio.run(index.asearch(queries, 5, filter={"tag": "b"}))
            assert _answer(awaited) == _answer(index.search(queries, 5, filter={"tag": "b"}))
            # Mutations staged by id, invisible until the commit; rollback drops them.
            assert index.add(extra[:5]) == [doc["_id"] for doc in extra[:5]]
            assert index.holds([extra[0]["_id"], "no-such-id"]) == [True, False]
            assert index.has_staged and index.staged.added == 5
            index.rollback()
            assert not index.has_staged and index.holds([extra[0]["_id"]]) == [False]
            index.add(extra)
            index.upsert([{**corpus[1], "text": corpus[1]["text"] + " revised"}])
            assert index.delete([corpus[2]["_id"], "no-such-id"], missing_ok=True) == 1
            index.commit()
            assert len(index) == N_DOCS + len(extra) - 1
            index.merge()
            got = index.get([corpus[1]["_id"], extra[3]["_id"]])
            assert [(h.id, h.text) for h in got] == [
                (corpus[1]["_id"], corpus[1]["text"] + " revised"),
                (extra[3]["_id"], extra[3]["text"]),
            ]
            assert got[1].metadata == extra[3]["metadata"]
            with pytest.raises(UnknownIdError, match=corpus[2]["_id"]):
                index.get([corpus[2]["_id"]])
        finally:
            index.close()
        again = opened()  # what was committed is what a reopened index answers
        try:
            assert len(again) == N_DOCS + len(extra) - 1
            after[kind] = _searches(again, queries, vectors)
        finally:
            again.close()
    for kind in KINDS[1:]:
        for name in PARENTS_ALIKE if kind == "parents" else answers["hybrid"]:
            _assert_agree(answers[kind][name], answers["hybrid"][name], f"{kind} {name}")
            _assert_agree(after[kind][name], after["hybrid"][name], f"{kind} {name}, reopened")
