"""``hybrid-engine index --shards N``, ``add``, ``delete`` and ``info`` on a sharded index, run as
a user runs them (separate processes, each starting its own local Ray): the shards hold
exactly the documents the commands left, each once, and errors are told in the command
line's words with nothing changed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_process import error_line, ok
from sharded_dirs import shard_texts, write_jsonl

from hybrid_engine.evaluation.datasets import load_beir

BASE = [
    {"_id": f"b{i}", "title": f"Title {i}", "text": f"document {i} about topic {i % 7}"}
    for i in range(40)
]
NEW = [{"_id": f"n{i}", "text": f"new document {i} on subject {i % 5}"} for i in range(12)]


@pytest.mark.slow  # five commands, each starting a local Ray (~6-9 s apiece)
def test_index_add_delete_and_info_on_a_sharded_index(tmp_path: Path) -> None:
    base = write_jsonl(tmp_path / "base.jsonl", BASE)
    new = write_jsonl(tmp_path / "new.jsonl", NEW)
    root = tmp_path / "sharded"
    out = ok("index", base, root, "--shards", "3")
    assert "indexed 40 documents with bm25, dense into 3 shard(s)" in out
    expected = {doc["_id"]: doc["text"] for doc in BASE}
    shards = shard_texts(root)
    assert len(shards) == 3 and all(shards)  # 40 ids hashed over 3 shards: none empty
    assert sum(len(s) for s in shards) == 40
    assert {k: v for s in shards for k, v in s.items()} == expected

    out = ok("add", root, new)
    assert out.strip() == f"added 12 document(s) -> {root}: 52 documents in 3 shard(s)"
    expected.update({doc["_id"]: doc["text"] for doc in NEW})

    changed = [{"_id": "b3", "text": "replaced text of b3"}]
    out = ok("add", root, write_jsonl(tmp_path / "changed.jsonl", changed), "--upsert")
    assert out.startswith("upserted 1 document(s)")
    expected["b3"] = "replaced text of b3"

    out = ok("delete", root, "b5", "n7", "missing", "--missing-ok")
    assert out.startswith("deleted 2 document(s) (1 not in the index, skipped)")
    del expected["b5"], expected["n7"]

    shards = shard_texts(root)
    assert sum(len(s) for s in shards) == len(expected)  # each document in one shard only
    assert {k: v for s in shards for k, v in s.items()} == expected

    facts = json.loads(ok("info", root, "--json"))
    assert facts["shards"] == 3
    assert facts["documents"] == len(expected)
    assert facts["retrievers"] == ["bm25", "dense"]
    assert [s["documents"] for s in facts["per_shard"]] == [len(s) for s in shards]


@pytest.mark.slow  # three commands starting a local Ray
def test_sharded_errors_are_told_in_the_command_lines_words(tmp_path: Path) -> None:
    base = write_jsonl(tmp_path / "base.jsonl", BASE)
    root = tmp_path / "sharded"
    ok("index", base, root, "--shards", "2", "--retrievers", "bm25", "--quiet")
    before = shard_texts(root)

    line = error_line("add", root, base)
    assert "is already in the index" in line and "pass --upsert" in line
    assert str(base) in line
    line = error_line("delete", root, "b1", "nope")
    assert "['nope']" in line and "--missing-ok" in line and "nothing was deleted" in line
    assert shard_texts(root) == before  # nothing committed by either

    line = error_line("index", base, root, "--shards", "2", "--force")
    assert "--force" in line and "sharded" in line
    line = error_line("index", base, root, "--shards", "2")
    assert "exists and is not empty" in line
    line = error_line("index", base, tmp_path / "other", "--shards", "0")
    assert "--shards" in line


@pytest.mark.slow  # two indexes built and searched by four commands, two of them on Ray
def test_sharded_search_answers_as_one_index(shared_data: Path, tmp_path: Path) -> None:
    dataset = load_beir(shared_data / "beir" / "scifact", split="test")
    corpus = write_jsonl(tmp_path / "corpus.jsonl", dataset.corpus[:80])
    queries = list(dataset.queries.values())[:6]
    # The single index first: the shards read its vectors from the embedding cache (int8
    # encodings depend a little on their batch, and both sides must search the same vectors).
    ok("index", corpus, tmp_path / "one", "--quiet")
    ok("index", corpus, tmp_path / "sharded", "--shards", "3", "--quiet")
    one = [
        json.loads(line)
        for line in ok("search", tmp_path / "one", *queries, "--json").splitlines()
        if line
    ]
    got = [
        json.loads(line)
        for line in ok("search", tmp_path / "sharded", *queries, "--json").splitlines()
        if line
    ]
    assert len(got) == len(one) == len(queries)
    for mine, theirs in zip(got, one, strict=True):
        assert mine["query"] == theirs["query"]
        assert [h["id"] for h in mine["hits"]] == [h["id"] for h in theirs["hits"]]
        np.testing.assert_allclose(
            [h["score"] for h in mine["hits"]], [h["score"] for h in theirs["hits"]], atol=1e-5
        )
    line = error_line("search", tmp_path / "sharded", queries[0], "--variant", "fp32")
    assert "--variant" in line and "sharded" in line
