"""``hybrid-engine add`` and ``delete`` on a saved live index, and how every command reports
errors (one line and exit status 2, the traceback with ``--debug``), run in-process through
``main`` on BM25-only indexes (they load without a model), and once on a hybrid index (with
the prepared bi-encoder)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from live_oracle import live_documents

from hybrid_engine import Encoder, HybridIndex, UnknownIdError, WriterLockedError
from hybrid_engine.cli import main
from hybrid_engine.cli._errors import is_user_error

BASE = [
    {"_id": "d1", "title": "Cats", "text": "The cat sat on the mat.", "year": 2019},
    {"_id": "d2", "title": "Dogs", "text": "A dog chased the cat.", "year": 2021},
    {"_id": "d3", "title": "Birds", "text": "Birds fly over the sea.", "year": 2023},
    {"_id": "d4", "title": "", "text": "Tides follow the moon.", "metadata": {"year": 2024}},
]
NEW = [
    {"_id": "n1", "title": "Zebras", "text": "Zebras graze on the savanna.", "year": 2024},
    {"_id": "n2", "text": "Herons wade in the marsh.", "metadata": {"tags": ["bird", "marsh"]}},
]


def write_jsonl(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(doc) + "\n" for doc in docs), encoding="utf-8")
    return path


def expected(doc: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
    """(title, text, metadata) of a corpus line: its ``metadata`` and its other keys."""
    extra = {k: v for k, v in doc.items() if k not in ("_id", "title", "text", "metadata")}
    return doc.get("title", ""), doc["text"], {**doc.get("metadata", {}), **extra}


@pytest.fixture
def index_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A BM25-only live index of ``BASE`` saved by ``hybrid-engine index``."""
    corpus = write_jsonl(tmp_path / "corpus.jsonl", BASE)
    path = tmp_path / "idx"
    assert main(["index", str(corpus), str(path), "--retrievers", "bm25", "--quiet"]) == 0
    capsys.readouterr()
    return path


def live_ids(path: Path) -> list[str]:
    """The ids of the index's last commit, in its order (a fresh load: what is durable)."""
    return [doc["_id"] for doc in live_documents(HybridIndex.load(path))]


def commit_points(path: Path) -> list[str]:
    return sorted(p.name for p in path.glob("commit-*.json"))


def one_error_line(capsys: pytest.CaptureFixture[str], command: str) -> str:
    """The one line an error printed on stderr, without its ``hybrid-engine CMD: error: ``."""
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    prefix = f"hybrid-engine {command}: error: "
    assert lines[0].startswith(prefix)
    return lines[0][len(prefix) :]


def search_ids(capsys: pytest.CaptureFixture[str], path: Path, query: str) -> list[str]:
    assert main(["search", str(path), query, "--json", "-k", "10"]) == 0
    (listing,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return [hit["id"] for hit in listing["hits"]]


def test_add_commits_the_documents_and_search_finds_them(
    index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = write_jsonl(tmp_path / "new.jsonl", NEW)
    assert main(["add", str(index_dir), str(new), "--threads", "1"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"added 2 document(s) -> {index_dir}: 6 documents in 2 segment(s)"
    ]
    assert live_ids(index_dir) == ["d1", "d2", "d3", "d4", "n1", "n2"]
    hits = HybridIndex.load(index_dir).get(["n2", "n1"])
    assert [(h.title, h.text, h.metadata) for h in hits] == [expected(NEW[1]), expected(NEW[0])]
    assert search_ids(capsys, index_dir, "zebras savanna") == ["n1"]
    assert search_ids(capsys, index_dir, "herons in a marsh") == ["n2"]
    # the lock is given back: another writer may change the index now
    with HybridIndex.load(index_dir) as engine:
        engine.delete(["n1"])
        engine.commit()


def test_add_reads_standard_input(
    index_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = "".join(json.dumps(doc) + "\n" for doc in NEW)
    monkeypatch.setattr("sys.stdin", io.StringIO(lines))
    assert main(["add", str(index_dir), "-"]) == 0
    assert "added 2 document(s)" in capsys.readouterr().out
    assert live_ids(index_dir)[-2:] == ["n1", "n2"]
    monkeypatch.setattr("sys.stdin", io.StringIO('{"_id": "x"}\n'))
    assert main(["add", str(index_dir), "-"]) == 2
    assert one_error_line(capsys, "add") == '<stdin>:1: missing "text" (a string)'


def test_add_of_an_indexed_id_fails_and_commits_nothing(
    index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before_ids, before_commits = live_ids(index_dir), commit_points(index_dir)
    clash = write_jsonl(tmp_path / "clash.jsonl", [NEW[0], {"_id": "d2", "text": "again"}])
    assert main(["add", str(index_dir), str(clash)]) == 2
    message = one_error_line(capsys, "add")
    assert "already in the index" in message and "'d2'" in message
    assert live_ids(index_dir) == before_ids  # n1, the good line, was not committed either
    assert commit_points(index_dir) == before_commits
    assert HybridIndex.load(index_dir).get(["d2"])[0].text == "A dog chased the cat."


def test_upsert_replaces_the_documents_of_indexed_ids(
    index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    changed = {"_id": "d2", "title": "Wolves", "text": "A wolf howled at night.", "year": 2025}
    file = write_jsonl(tmp_path / "changed.jsonl", [changed, NEW[0]])
    assert main(["add", str(index_dir), str(file), "--upsert"]) == 0
    assert capsys.readouterr().out.startswith("upserted 2 document(s) -> ")
    assert live_ids(index_dir) == ["d1", "d3", "d4", "d2", "n1"]  # a replaced one moves last
    (hit,) = HybridIndex.load(index_dir).get(["d2"])
    assert (hit.title, hit.text, hit.metadata) == expected(changed)
    assert search_ids(capsys, index_dir, "wolf howled") == ["d2"]
    assert search_ids(capsys, index_dir, "dog chased") == []


def test_delete_removes_the_documents(
    index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["delete", str(index_dir), "d1", "d3", "d1"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"deleted 2 document(s) -> {index_dir}: 2 documents in 1 segment(s)"
    ]
    assert live_ids(index_dir) == ["d2", "d4"]
    assert "d1" not in search_ids(capsys, index_dir, "cat mat")
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("  d4 \n\nd2\n", encoding="utf-8")
    assert main(["delete", str(index_dir), "--ids-file", str(ids_file)]) == 0
    assert "deleted 2 document(s)" in capsys.readouterr().out
    assert live_ids(index_dir) == []


def test_delete_of_an_unknown_id_fails_unless_missing_ok(
    index_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    before_commits = commit_points(index_dir)
    assert main(["delete", str(index_dir), "d1", "nope"]) == 2
    message = one_error_line(capsys, "delete")
    assert message.startswith("1 id(s) are not in the index, e.g. ['nope']")  # no KeyError quotes
    assert live_ids(index_dir) == ["d1", "d2", "d3", "d4"]  # d1 stays
    assert commit_points(index_dir) == before_commits
    monkeypatch.setattr("sys.stdin", io.StringIO("nope\nd1\n"))
    assert main(["delete", str(index_dir), "--ids-file", "-", "--missing-ok"]) == 0
    assert capsys.readouterr().out.startswith("deleted 1 document(s) (1 not in the index, skipped)")
    assert live_ids(index_dir) == ["d2", "d3", "d4"]
    assert main(["delete", str(index_dir)]) == 2
    assert "no ids to delete" in one_error_line(capsys, "delete")


def test_a_locked_index_fails_in_one_line(
    index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = write_jsonl(tmp_path / "new.jsonl", NEW)
    with HybridIndex.load(index_dir) as writer:
        writer.delete(["d1"])  # the first change takes the write lock
        assert main(["add", str(index_dir), str(new)]) == 2
        assert "another writer holds" in one_error_line(capsys, "add")
        assert main(["delete", str(index_dir), "d2"]) == 2
        assert "another writer holds" in one_error_line(capsys, "delete")
    assert live_ids(index_dir) == ["d1", "d2", "d3", "d4"]


def test_missing_files_and_folders_fail_in_one_line(
    index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "missing"
    assert main(["delete", str(missing), "d1"]) == 2
    assert "not a directory" in one_error_line(capsys, "delete")
    assert main(["add", str(missing), str(write_jsonl(tmp_path / "n.jsonl", NEW))]) == 2
    assert "not a directory" in one_error_line(capsys, "add")
    assert main(["add", str(index_dir), str(tmp_path / "none.jsonl")]) == 2
    assert "missing file" in one_error_line(capsys, "add")
    argv = ["delete", str(index_dir), "--ids-file"]
    assert main([*argv, str(tmp_path / "none.txt")]) == 2  # FileNotFoundError
    assert one_error_line(capsys, "delete") == f"{tmp_path / 'none.txt'}: No such file or directory"
    assert main([*argv, str(tmp_path)]) == 2  # IsADirectoryError
    assert one_error_line(capsys, "delete") == f"{tmp_path}: Is a directory"


def test_debug_prints_the_traceback(
    index_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--debug", "delete", str(index_dir), "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert re.search(r"^hybrid_engine\.errors\.UnknownIdError: 1 id\(s\)", err, re.MULTILINE)
    assert "hybrid-engine delete: error:" not in err
    assert main(["--debug", "search", str(tmp_path / "missing"), "cat"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "IndexFormatError" in err


def test_programming_errors_are_not_swallowed(
    index_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise AttributeError("a bug")

    monkeypatch.setattr("hybrid_engine.cli.delete.load_engine", broken)
    with pytest.raises(AttributeError, match="a bug"):
        main(["delete", str(index_dir), "d1"])


def test_which_errors_are_the_users() -> None:
    assert is_user_error(FileNotFoundError(2, "No such file or directory", "corpus.jsonl"))
    assert is_user_error(PermissionError(13, "Permission denied", "idx"))
    assert is_user_error(FileExistsError("idx exists and is not empty"))
    assert is_user_error(WriterLockedError("locked")) and is_user_error(UnknownIdError("x"))
    assert not is_user_error(OSError(28, "No space left on device"))  # no file named
    assert not is_user_error(KeyError("a key"))  # a plain KeyError is a bug
    assert not is_user_error(AttributeError("a bug"))


def test_add_to_a_hybrid_index_encodes_with_the_recorded_model(
    tmp_path: Path, model_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", BASE)
    path = tmp_path / "hybrid"
    assert main(["index", str(corpus), str(path), "--quiet", "--threads", "1"]) == 0
    new = write_jsonl(tmp_path / "new.jsonl", NEW)
    assert main(["add", str(path), str(new), "--threads", "1"]) == 0
    assert "added 2 document(s)" in capsys.readouterr().out
    encoder = Encoder.load(model_path, variant="int8", num_threads=1)
    engine = HybridIndex.load(path, encoder=encoder)
    assert engine.retrievers == ("bm25", "dense") and engine.num_segments == 2
    dense = engine._state.snapshot.segments[1].dense
    assert dense is not None
    texts = [f"{doc['title']} {doc['text']}" if doc.get("title") else doc["text"] for doc in NEW]
    np.testing.assert_allclose(dense.vectors, encoder.encode(texts), atol=1e-6)
    assert search_ids(capsys, path, "zebras savanna")[0] == "n1"
