"""The HTTP server returns exactly the engine's hits, stages and commits through the live
index, answers bad requests 4xx naming the problem (never 500), counts requests and stages
in Prometheus text, and enforces its API key when it has one.

FastAPI is imported in a fixture, so that a missing ``serve`` extra is a skip here and a
failure under CI (tests/conftest.py)."""

from __future__ import annotations

from dataclasses import asdict
from types import ModuleType
from typing import Any

import pytest
from dense_oracle import HashingEncoder
from live_oracle import QUERIES, document, live_documents, new_engine

from hybrid_engine import HybridIndex


@pytest.fixture(scope="module")
def server() -> ModuleType:
    """``hybrid_engine.server``, or a skip when the serve extra is absent."""
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    pytest.importorskip("httpx", reason="the serve extra is not installed")
    from hybrid_engine import server

    return server


@pytest.fixture
def engine() -> HybridIndex:
    return new_engine([document(i) for i in range(30)])


def client(server: ModuleType, engine: HybridIndex, **options: Any) -> Any:
    from fastapi.testclient import TestClient

    return TestClient(server.create_app(engine, **options))


def expected_hits(engine: HybridIndex, queries: list[str], **options: Any) -> list[Any]:
    """The engine's own hits as the JSON the server must send."""
    return [[asdict(h) for h in row] for row in engine.search(queries, **options).hits()]


def got_hits(response: Any) -> list[Any]:
    assert response.status_code == 200, response.text
    return [r["hits"] for r in response.json()["results"]]


def test_search_returns_the_engines_hits(server: ModuleType, engine: HybridIndex) -> None:
    http = client(server, engine)
    body = http.post("/search", json={"queries": QUERIES, "k": 5})
    assert got_hits(body) == expected_hits(engine, QUERIES, k=5)
    assert [r["query"] for r in body.json()["results"]] == QUERIES
    assert {"bm25", "dense", "fusion", "total"} <= set(body.json()["timings_ms"])
    one = http.post("/search", json={"query": QUERIES[0], "k": 3})
    assert got_hits(one) == expected_hits(engine, QUERIES[:1], k=3)


def test_search_passes_filter_fusion_and_mmr(server: ModuleType, engine: HybridIndex) -> None:
    where = {"group": {"$in": [1, 2]}, "lang": {"$ne": "fr"}}
    options = {"k": 4, "filter": where, "fusion": "rrf", "mmr": 0.5}
    got = got_hits(client(server, engine).post("/search", json={"queries": QUERIES, **options}))
    assert got == expected_hits(engine, QUERIES, **options)
    for row in got:
        assert row and all(h["metadata"]["group"] in (1, 2) for h in row)
        assert all(h["metadata"]["lang"] != "fr" for h in row)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"query": "cat", "k": 0}, "k"),
        ({"query": "cat", "k": 1001}, "k"),
        ({"query": "cat", "mmr": 1.5}, "mmr"),
        ({"query": "cat", "fusion": "median"}, "fusion"),
        ({"query": None}, "exactly one of 'query'"),  # was a 500 (schemathesis found it)
        ({"query": "cat", "mmr": False}, "mmr"),  # no coercion (schemathesis found it)
        ({"query": "cat", "k": "5"}, "k"),
        ({"queries": None}, "exactly one of 'query'"),
        ({"query": "cat", "weights": {"bm25": -1.0}}, "weights"),
        ({"query": "cat", "queries": ["dog"]}, "exactly one of 'query'"),
        ({}, "exactly one of 'query'"),
        ({"queries": ["cat"] * 65}, "queries"),
        ({"queries": []}, "queries"),
        ({"query": "cat", "top_k": 3}, "top_k"),
    ],
)
def test_a_bad_search_body_is_422_naming_the_field(
    server: ModuleType, engine: HybridIndex, body: dict[str, Any], field: str
) -> None:
    response = client(server, engine).post("/search", json=body)
    assert response.status_code == 422
    assert field in response.text


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"query": "cat", "filter": {"group": {"$near": 1}}}, "$near"),
        ({"query": "cat", "weights": {"splade": 2.0}}, "splade"),  # not a retriever here
        ({"query": "cat", "rerank": 5}, "rerank"),  # no reranker
    ],
)
def test_an_engine_error_is_400_with_its_message(
    server: ModuleType, engine: HybridIndex, body: dict[str, Any], named: str
) -> None:
    response = client(server, engine).post("/search", json=body)
    assert response.status_code == 400
    assert named in response.json()["detail"]


def test_documents_then_commit_make_them_searchable(
    server: ModuleType, engine: HybridIndex
) -> None:
    http = client(server, engine)
    new = [{**document(i), "text": f"zebra {i} giraffe"} for i in range(40, 43)]
    staged = http.post("/documents", json={"documents": new}).json()
    assert staged == {"staged": 3, "ids": ["d40", "d41", "d42"]}
    query = {"query": "zebra giraffe", "k": 3}
    before = {h["id"] for h in got_hits(http.post("/search", json=query))[0]}
    assert not before & {"d40", "d41", "d42"}  # staged, not committed
    assert http.post("/commit").json() == {"documents": 33, "segments": engine.num_segments}
    after = got_hits(http.post("/search", json=query))[0]
    assert {h["id"] for h in after} == {"d40", "d41", "d42"}
    assert after == expected_hits(engine, ["zebra giraffe"], k=3)[0]
    ids = [d["_id"] for d in live_documents(engine)]
    assert ids == [f"d{i}" for i in range(30)] + ["d40", "d41", "d42"]


def test_add_of_an_indexed_id_is_409_and_upsert_replaces_it(
    server: ModuleType, engine: HybridIndex
) -> None:
    http = client(server, engine)
    again = {"documents": [document(1, version=2)]}
    refused = http.post("/documents", json=again)
    assert refused.status_code == 409
    assert "'d1'" in refused.json()["detail"] and "upsert" in refused.json()["detail"]
    assert http.post("/documents", json={**again, "upsert": True}).json() == {
        "staged": 1,
        "ids": ["d1"],
    }
    http.post("/commit")
    replaced = [d for d in live_documents(engine) if d["_id"] == "d1"]
    assert replaced == [document(1, version=2)]


def test_delete_an_unknown_id_is_404_naming_it(server: ModuleType, engine: HybridIndex) -> None:
    http = client(server, engine)
    response = http.request("DELETE", "/documents", json={"ids": ["d2", "nope"]})
    assert response.status_code == 404
    assert "'nope'" in response.json()["detail"]
    skipped = {"ids": ["d2", "nope", "d2"], "missing_ok": True}
    assert http.request("DELETE", "/documents", json=skipped).json() == {
        "staged": 1,
        "ids": ["d2"],
    }
    http.post("/commit")
    assert len(engine) == 29
    hits = got_hits(http.post("/search", json={"queries": QUERIES, "k": 30}))
    assert all(h["id"] != "d2" for row in hits for h in row)


def test_oversized_documents_are_422(server: ModuleType, engine: HybridIndex) -> None:
    http = client(server, engine)
    many = {"documents": [document(100 + i) for i in range(server.MAX_DOCUMENTS + 1)]}
    assert http.post("/documents", json=many).status_code == 422
    long = {"documents": [{"_id": "x", "text": "a" * (server.MAX_TEXT_CHARS + 1)}]}
    response = http.post("/documents", json=long)
    assert response.status_code == 422 and "text" in response.text
    assert len(engine) == 30


def test_health_names_retrievers_documents_and_segments(
    server: ModuleType, engine: HybridIndex
) -> None:
    health = client(server, engine).get("/health").json()
    assert health == {
        "status": "ok",
        "retrievers": ["bm25", "dense"],
        "documents": 30,
        "segments": 1,
        "staged": {"added": 0, "deleted": 0},
    }


def test_metrics_count_requests_stages_and_documents(
    server: ModuleType, engine: HybridIndex
) -> None:
    http = client(server, engine)
    for _ in range(3):
        http.post("/search", json={"query": "cat", "k": 2})
    http.post("/search", json={"query": "cat", "k": 0})
    text = http.get("/metrics").text
    assert 'hybrid_engine_requests_total{endpoint="POST /search",status="200"} 3.0' in text
    assert 'hybrid_engine_requests_total{endpoint="POST /search",status="422"} 1.0' in text
    assert 'hybrid_engine_request_seconds_count{endpoint="POST /search"} 4.0' in text
    for stage in ("bm25", "dense", "fusion", "total"):
        assert f'hybrid_engine_stage_seconds_count{{stage="{stage}"}} 3.0' in text
    assert "hybrid_engine_documents 30.0" in text


def test_the_api_key_is_enforced_when_set(server: ModuleType, engine: HybridIndex) -> None:
    http = client(server, engine, api_key="s3cret")
    body = {"query": "cat"}
    assert http.post("/search", json=body).status_code == 401
    wrong = http.post("/search", json=body, headers={"X-API-Key": "nope"})
    assert wrong.status_code == 401 and "X-API-Key" in wrong.json()["detail"]
    assert http.post("/search", json=body, headers={"X-API-Key": "s3cret"}).status_code == 200
    assert http.post("/commit").status_code == 401
    assert http.get("/metrics").status_code == 401
    assert http.get("/health").status_code == 200
    for path in ("/docs", "/redoc", "/openapi.json", "/stats", "/documents/d1"):
        assert http.get(path).status_code == 401, path
        assert http.get(path, headers={"X-API-Key": "s3cret"}).status_code == 200, path
    assert http.post("/rollback").status_code == 401
    assert http.get("/openapi.json", headers={"X-API-Key": "s3cret"}).json() == http.app.openapi()
    with pytest.raises(ValueError, match="api_key is empty"):
        server.create_app(engine, api_key="")


def test_cors_is_off_unless_origins_are_given(server: ModuleType, engine: HybridIndex) -> None:
    preflight = {"Origin": "https://app.example", "Access-Control-Request-Method": "POST"}
    closed = client(server, engine).options("/search", headers=preflight)
    assert "access-control-allow-origin" not in closed.headers
    opened = client(server, engine, cors_origins=["https://app.example"])
    response = opened.options("/search", headers=preflight)
    assert response.headers["access-control-allow-origin"] == "https://app.example"


def test_the_serve_command_binds_localhost_and_serves_the_loaded_index(
    server: ModuleType, engine: HybridIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fastapi.testclient import TestClient

    from hybrid_engine.cli import _engine, build_parser, main
    from hybrid_engine.cli import serve as command

    loaded: dict[str, Any] = {}

    def load_engine(path: str, **options: Any) -> HybridIndex:
        loaded.update(path=path, **options)
        return engine

    def serve_until_stopped(uvicorn_server: Any, sock: Any) -> None:
        loaded["address"] = sock.getsockname()[0]
        app = uvicorn_server.config.app
        loaded["health"] = TestClient(app).get("/health").json()
        key = {"X-API-Key": "k"}
        loaded["search"] = TestClient(app).post("/search", json={"query": "cat"}, headers=key)

    monkeypatch.setattr(_engine, "load_engine", load_engine)  # what load_searched calls
    monkeypatch.setattr(command, "serve_until_stopped", serve_until_stopped)
    monkeypatch.setenv(command.API_KEY_ENV, "k")
    defaults = build_parser().parse_args(["serve", "my.idx"])
    assert (defaults.host, defaults.port) == ("127.0.0.1", 8080)
    assert main(["serve", "my.idx", "--port", "0"]) == 0
    assert loaded["path"] == "my.idx" and loaded["mmap"] is False
    assert loaded["address"] == "127.0.0.1"
    assert loaded["health"]["documents"] == 30
    assert loaded["search"].status_code == 200


def test_serve_refuses_a_batch_max_below_one(
    server: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    from hybrid_engine.cli import main

    assert main(["serve", "my.idx", "--batch-max", "0"]) != 0
    assert "--batch-max must be >= 1, got 0" in capsys.readouterr().err


def test_staged_changes_at_shutdown_are_reported_or_committed(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from hybrid_engine.cli.serve import settle_staged

    engine = new_engine([document(i) for i in range(5)])
    engine.save(tmp_path / "index")
    engine.add([document(99)])
    settle_staged(engine, commit=False)
    assert "not committed and are dropped" in capsys.readouterr().err
    reread = HybridIndex.load(tmp_path / "index", encoder=HashingEncoder())
    assert "d99" not in {d["_id"] for d in live_documents(reread)}
    settle_staged(engine, commit=True)
    assert "committed the staged changes" in capsys.readouterr().err
    reread = HybridIndex.load(tmp_path / "index", encoder=HashingEncoder())
    assert "d99" in {d["_id"] for d in live_documents(reread)}
    assert not engine.has_staged
    settle_staged(engine, commit=False)  # nothing staged: nothing said
    assert capsys.readouterr().err == ""
