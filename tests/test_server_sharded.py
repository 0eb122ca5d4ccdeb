"""``hybrid-engine serve`` over a sharded index, as a user runs it: a real process that starts
its own local Ray and opens the shards on it. Its searches answer as one ``HybridIndex`` over
the same documents (ids and scores, loaded here), name the shards that answered and their
times, and the writes, reads, errors, API key, metrics and the stop signal behave as over one
index (what the shards hold afterwards is read from their directories); it serves one index's
OpenAPI document and answers schemathesis' cases as it declares; a frozen shard is named and
its documents left out; the options a sharded index does not take are refused, named."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_process import error_line, ok
from sharded_dirs import shard_texts, write_jsonl

from hybrid_engine import HybridIndex
from hybrid_engine.distributed.partition import shard_of
from hybrid_engine.evaluation.datasets import load_beir

httpx = pytest.importorskip("httpx", reason="the serve extra is not installed")
pytest.importorskip("uvicorn", reason="the serve extra is not installed")
schemathesis = pytest.importorskip("schemathesis", reason="the dev extra is not installed")
from hypothesis import HealthCheck, given, settings  # noqa: E402

SHARDS = 4
KEY = "sharded-key"
"""The API key the server is started with."""
OPTIONS = {"k": 5, "offset": 2, "fusion": "rrf", "weights": {"bm25": 2.0, "dense": 1.0}, "mmr": 0.5}
"""Search options the sharded index shares with one index, all at once."""
SCHEMA_EXAMPLES = 30
"""Generated cases per operation and mode (``test_server_schema`` runs 60 over one index)."""
SHARDED_START_S = 300.0
"""Seconds serve has to start Ray and the shards' actors (each loading its shard and the
bi-encoder) and answer: about 60 s on a busy 2-core machine."""


def hit_rows(answer: dict[str, Any]) -> list[tuple[str, float]]:
    """(id, score) of each hit of a one-query ``POST /search`` answer."""
    (result,) = answer["results"]
    return [(hit["id"], hit["score"]) for hit in result["hits"]]


@pytest.mark.slow  # two indexes built by the CLI (one on Ray), then a server on Ray
def test_serve_answers_over_a_sharded_index_as_over_one_index(
    shared_data: Path, tmp_path: Path, serve: Any
) -> None:
    dataset = load_beir(shared_data / "beir" / "scifact", split="test")
    docs = dataset.corpus[:80]
    corpus = write_jsonl(tmp_path / "corpus.jsonl", docs)
    queries = list(dataset.queries.values())[:5]
    # The single index first: the shards read its vectors from the embedding cache.
    ok("index", corpus, tmp_path / "one", "--quiet")
    root = tmp_path / "sharded"
    ok("index", corpus, root, "--shards", str(SHARDS), "--quiet")
    with HybridIndex.load(tmp_path / "one") as one:
        expected = [[(h.id, h.score) for h in one.search([q], 10).hits()[0]] for q in queries]
        optioned = [(h.id, h.score) for h in one.search([queries[0]], **OPTIONS).hits()[0]]
        read = one.search([queries[1]], 5)
        snippets, places = read.highlights()[0], read.explain()[0]

    server = serve(str(root), "--port", "0", api_key=KEY, start_timeout_s=SHARDED_START_S)
    url = server.url()
    assert httpx.post(f"{url}/search", json={"query": queries[0]}).status_code == 401
    # The first search compiles the shards' kernels, a commit encodes: slow on a busy machine.
    http = httpx.Client(base_url=url, timeout=120.0, headers={"X-API-Key": KEY})
    health = http.get("/health").json()
    assert health["documents"] == len(docs) and health["retrievers"] == ["bm25", "dense"]
    assert health["segments"] == SHARDS  # one segment a shard, each built in one commit
    for query, rows in zip(queries, expected, strict=True):
        answer = http.post("/search", json={"query": query, "k": 10}).json()
        got = hit_rows(answer)
        assert [i for i, _ in got] == [i for i, _ in rows]
        np.testing.assert_allclose([s for _, s in got], [s for _, s in rows], atol=1e-5)
        assert answer["missing_shards"] == []
        assert sorted(answer["shard_timings_ms"]) == [str(s) for s in range(SHARDS)]
        assert all(ms > 0 for ms in answer["shard_timings_ms"].values())

    answer = http.post("/search", json={"query": queries[0], **OPTIONS}).json()
    got = hit_rows(answer)
    assert [i for i, _ in got] == [i for i, _ in optioned] and len(got) == OPTIONS["k"]
    np.testing.assert_allclose([s for _, s in got], [s for _, s in optioned], atol=1e-5)

    # Highlights and each hit's places in the legs, as one index gives them.
    answer = http.post(
        "/search", json={"query": queries[1], "k": 5, "highlight": True, "explain": True}
    ).json()
    (result,) = answer["results"]
    assert [hit["highlight"] for hit in result["hits"]] == snippets
    got_places = [
        {leg: (place["rank"], place["score"]) for leg, place in hit["legs"].items()}
        for hit in result["hits"]
    ]
    assert got_places == [
        {leg: (rank, pytest.approx(score, abs=1e-5)) for leg, (rank, score) in place.items()}
        for place in places
    ]
    # Every search option of one index is one of a sharded index: a budget too.
    budgeted = http.post("/search", json={"query": queries[0], "k": 10, "budget_ms": 60_000})
    assert budgeted.status_code == 200 and budgeted.json()["skipped"] == []
    assert [i for i, _ in hit_rows(budgeted.json())] == [i for i, _ in expected[0]]

    new = [{"_id": f"new{i}", "text": f"an added note about protein folding {i}"} for i in range(4)]
    staged = http.post("/documents", json={"documents": new[:2]}).json()
    assert staged == {"staged": 2, "ids": ["new0", "new1"]}
    assert http.get("/health").json()["staged"] == {"added": 2, "deleted": 0}
    dropped = http.post("/rollback").json()
    assert dropped == {"dropped": {"added": 2, "deleted": 0}}
    assert http.get("/health").json()["staged"] == {"added": 0, "deleted": 0}

    assert http.post("/documents", json={"documents": new}).json()["staged"] == 4
    gone = [docs[0]["_id"], docs[1]["_id"]]
    deleted = http.request(
        "DELETE", "/documents", json={"ids": [*gone, "no-such-id"], "missing_ok": True}
    ).json()
    assert deleted == {"staged": 2, "ids": gone}
    duplicate = http.post("/documents", json={"documents": new[:1]})
    assert duplicate.status_code == 409 and "new0" in duplicate.json()["detail"]
    unknown = http.request("DELETE", "/documents", json={"ids": ["no-such-id"]})
    assert unknown.status_code == 404 and "no-such-id" in unknown.json()["detail"]
    # Staged changes are not seen before the commit.
    assert http.get("/documents/new3").status_code == 404
    committed = http.post("/commit").json()
    assert committed["documents"] == len(docs) + len(new) - len(gone)

    got = http.get("/documents/new3").json()
    assert got == {"_id": "new3", "title": "", "text": new[3]["text"], "metadata": {}}
    assert http.get(f"/documents/{gone[0]}").status_code == 404
    top = hit_rows(http.post("/search", json={"query": "protein folding note"}).json())
    assert {i for i, _ in top} >= {d["_id"] for d in new}

    stats = http.get("/stats").json()
    assert stats["documents"] == committed["documents"] and stats["path"] == str(root)
    assert stats["disk_bytes"] > 0 and stats["models"]["dense"]["variant"] == "int8"
    metrics = http.get("/metrics").text
    for shard in range(SHARDS):
        assert f'hybrid_engine_shard_seconds_count{{shard="{shard}"}}' in metrics

    http.close()
    server.process.send_signal(signal.SIGTERM)
    assert server.wait() == 0, server.stderr()
    assert "Traceback" not in server.stderr() and "warning" not in server.stderr()
    held = {k: v for shard in shard_texts(root) for k, v in shard.items()}
    wanted = {d["_id"]: d["text"] for d in docs if d["_id"] not in gone}
    wanted.update({d["_id"]: d["text"] for d in new})
    assert held == wanted


@pytest.mark.slow  # one sharded index built on Ray
def test_serve_refuses_the_options_a_sharded_index_does_not_take(tmp_path: Path) -> None:
    docs = [{"_id": f"d{i}", "text": f"note {i}"} for i in range(6)]
    root = tmp_path / "sharded"
    corpus = write_jsonl(tmp_path / "c.jsonl", docs)
    ok("index", corpus, root, "--shards", "2", "--quiet", "--retrievers", "bm25")
    line = error_line("serve", root, "--port", "0", "--mmap", "--threads", "2")
    assert "--threads" in line and "--mmap" in line and "sharded" in line


@pytest.mark.slow  # a sharded index built on Ray, served, then SCHEMA_EXAMPLES cases a mode
def test_serve_over_a_sharded_index_conforms_to_the_schema_of_one_index(
    tmp_path: Path, serve: Any
) -> None:
    """The operations and schema of ``test_server_schema`` (one index), served over a sharded
    one: the same OpenAPI document, and generated requests answered as it declares."""
    from test_server_schema import APP, EXCLUDED, OPERATIONS

    docs = [{"_id": f"d{i}", "text": f"note {i} about topic {i % 5}"} for i in range(30)]
    root = tmp_path / "sharded"
    ok("index", write_jsonl(tmp_path / "c.jsonl", docs), root, "--shards", str(SHARDS), "--quiet")
    url = serve(str(root), "--port", "0", start_timeout_s=SHARDED_START_S).url()
    assert httpx.get(f"{url}/openapi.json").json() == APP.openapi()
    for label in sorted(OPERATIONS):
        operation = OPERATIONS[label]
        for mode in schemathesis.GenerationMode:
            if mode is not schemathesis.GenerationMode.POSITIVE and not operation.body:
                continue

            @given(case=operation.as_strategy(mode))
            @settings(
                max_examples=SCHEMA_EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck)
            )
            def check(case: Any) -> None:
                case.call_and_validate(base_url=url, excluded_checks=EXCLUDED, timeout=120)

            check()


@pytest.mark.slow  # a sharded index built on Ray, then served
def test_a_shard_that_does_not_answer_is_named_and_its_documents_left_out(
    tmp_path: Path, serve: Any
) -> None:
    """With ``--shard-timeout``, a search waits that long for a frozen shard (its actor's
    process stopped with SIGSTOP), then answers from the others with ``missing_shards``
    naming it and its documents left out; once it runs again, answers are whole."""
    docs = [{"_id": f"d{i}", "text": f"the cat and note {i}"} for i in range(40)]
    root = tmp_path / "sharded"
    corpus = write_jsonl(tmp_path / "c.jsonl", docs)
    ok("index", corpus, root, "--shards", str(SHARDS), "--quiet", "--retrievers", "bm25")
    server = serve(
        str(root), "--port", "0", "--shard-timeout", "2", start_timeout_s=SHARDED_START_S
    )
    http = httpx.Client(base_url=server.url(), timeout=120.0)
    whole = http.post("/search", json={"query": "cat note", "k": len(docs)}).json()
    assert whole["missing_shards"] == [] and len(hit_rows(whole)) == len(docs)
    workers = subprocess.run(
        ["pgrep", "-f", "ray::ShardWorker"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(workers) == SHARDS, workers  # this server's shards, one actor each
    frozen = int(workers[0])
    os.kill(frozen, signal.SIGSTOP)
    try:
        partial = http.post("/search", json={"query": "cat note", "k": len(docs)}).json()
    finally:
        os.kill(frozen, signal.SIGCONT)
    (missing,) = partial["missing_shards"]
    assert str(missing) not in partial["shard_timings_ms"]
    others = [i for i, _ in hit_rows(whole) if shard_of(i, SHARDS) != missing]
    assert [i for i, _ in hit_rows(partial)] == others
    metrics = http.get("/metrics").text
    assert f'hybrid_engine_search_missing_shards_total{{shard="{missing}"}} 1.0' in metrics
    again = http.post("/search", json={"query": "cat note", "k": len(docs)}).json()
    assert again["missing_shards"] == [] and hit_rows(again) == hit_rows(whole)
