"""Pages (``offset``): every page is a slice of one deep ranking, through the Python API, the
command line and the server, with filters, MMR and every fusion method; bad offsets are
refused naming the argument."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_process import error_line, ok
from live_oracle import QUERIES, document, new_engine

from hybrid_engine import HybridIndex
from hybrid_engine.pipeline.fusion import METHODS

N_DOCS = 60


@pytest.fixture(scope="module")
def engine() -> HybridIndex:
    return new_engine([document(i) for i in range(N_DOCS)])


def _pages(engine: HybridIndex, size: int, pages: int, **options) -> list[np.ndarray]:  # type: ignore[no-untyped-def]
    return [
        engine.search(QUERIES, size, offset=page * size, **options).ids for page in range(pages)
    ]


@pytest.mark.parametrize("method", METHODS)
def test_pages_are_slices_of_one_deep_ranking(engine: HybridIndex, method: str) -> None:
    deep = engine.search(QUERIES, 40, fusion=method)
    pages = _pages(engine, 8, 5, fusion=method)
    assert np.array_equal(np.concatenate(pages, axis=1), deep.ids)
    scores = engine.search(QUERIES, 8, offset=16, fusion=method).scores
    assert np.array_equal(scores, deep.scores[:, 16:24])


def test_pages_with_a_filter_and_with_mmr(engine: HybridIndex) -> None:
    where = {"group": {"$in": [1, 2]}}
    deep = engine.search(QUERIES, 24, filter=where)
    assert np.array_equal(np.concatenate(_pages(engine, 6, 4, filter=where), 1), deep.ids)
    # MMR picks greedily from the same 30 candidates: its first 12 picks, paged.
    diverse = engine.search(QUERIES, 12, mmr=0.5)
    assert np.array_equal(np.concatenate(_pages(engine, 4, 3, mmr=0.5), 1), diverse.ids)


def test_a_page_past_the_documents_is_empty(engine: HybridIndex) -> None:
    last = engine.search(QUERIES, 10, offset=N_DOCS - 4)
    assert last.ids.shape == (len(QUERIES), 4)
    assert engine.search(QUERIES, 10, offset=N_DOCS).ids.shape == (len(QUERIES), 0)
    assert engine.search(QUERIES, 10, offset=N_DOCS + 100).hits() == [[]] * len(QUERIES)


@pytest.mark.parametrize("offset", [-1, 1.5, True, "2"])
def test_a_bad_offset_is_refused_naming_it(engine: HybridIndex, offset: object) -> None:
    with pytest.raises(ValueError, match="offset"):
        engine.search(QUERIES, 5, offset=offset)  # type: ignore[arg-type]


def test_the_server_pages_as_the_engine(engine: HybridIndex) -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from hybrid_engine.server import create_app

    http = TestClient(create_app(engine))
    answer = http.post("/search", json={"queries": QUERIES, "k": 5, "offset": 10})
    assert answer.status_code == 200, answer.text
    got = [[hit["id"] for hit in result["hits"]] for result in answer.json()["results"]]
    expected = engine.search(QUERIES, 15).hits()
    assert got == [[hit.id for hit in row[10:15]] for row in expected]
    bad = http.post("/search", json={"query": "cat", "offset": -1})
    assert bad.status_code == 422 and "offset" in bad.text


def test_the_command_line_pages_and_numbers_the_ranks(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(document(i)) + "\n" for i in range(N_DOCS)))
    ok("index", corpus, tmp_path / "index", "--retrievers", "bm25", "--quiet")
    whole = json.loads(ok("search", tmp_path / "index", "snow wind", "-k", "9", "--json"))
    page = json.loads(
        ok("search", tmp_path / "index", "snow wind", "-k", "3", "--offset", "6", "--json")
    )
    assert page["hits"] == whole["hits"][6:9]
    listing = ok("search", tmp_path / "index", "snow wind", "-k", "3", "--offset", "6")
    assert [line.split(".")[0].strip() for line in listing.splitlines() if ". d" in line] == [
        "7",
        "8",
        "9",
    ]
    problem = error_line("search", tmp_path / "index", "cat", "--offset", "-2")
    assert "argument --offset: expected an integer >= 0, got -2" in problem
