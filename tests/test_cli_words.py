"""The command line's errors speak its own language (issue 24): flags, not Python names
(``--upsert``, not ``upsert()``; ``--missing-ok``, not ``missing_ok=True``), 1-based lines and
``_id``s, not 0-based positions; ``--debug`` before or after the command; usage errors in one
line. Run as separate processes on BM25-only indexes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_process import cli, error_line, ok, write_jsonl

from hybrid_engine import HybridIndex

BASE = [
    {"_id": "d1", "title": "Cats", "text": "The cat sat on the mat.", "year": 2019},
    {"_id": "d2", "title": "Dogs", "text": "A dog chased the cat.", "year": 2021},
]
PYTHON_NAMES = ("upsert()", "missing_ok", "engine.close()", "delete()", "document 0", "document 1")


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    path = tmp_path / "idx"
    ok("index", write_jsonl(tmp_path / "base.jsonl", BASE), path, "--retrievers", "bm25", "--quiet")
    return path


def no_python_names(message: str) -> None:
    assert not any(name in message for name in PYTHON_NAMES), message


def test_add_of_an_indexed_id_names_its_line_and_upsert(index_dir: Path, tmp_path: Path) -> None:
    new = write_jsonl(
        tmp_path / "new.jsonl",
        [{"_id": "n1", "text": "new"}, {"_id": "d2", "text": "again"}, {"_id": "d1", "text": "x"}],
    )
    message = error_line("add", index_dir, new)
    assert message == (
        f"{new}:2: document 'd2' is already in the index (and 1 more); pass --upsert to replace "
        "such documents, or leave them out"
    )
    no_python_names(message)
    assert ok("add", index_dir, new, "--upsert").startswith("upserted 3 document(s) -> ")


def test_delete_of_an_unknown_id_names_missing_ok(index_dir: Path) -> None:
    message = error_line("delete", index_dir, "d1", "nope")
    assert message == (
        "1 id(s) are not in the index, e.g. ['nope']; nothing was deleted (pass --missing-ok to "
        "delete the others)"
    )
    no_python_names(message)


def test_get_of_an_unknown_id_names_missing_ok(index_dir: Path) -> None:
    message = error_line("get", index_dir, "d1", "nope", "gone")
    assert message == (
        "document id 'nope' is not in the index (nor 1 more); pass --missing-ok to leave "
        "unknown ids out"
    )
    no_python_names(message)


def test_a_bad_metadata_value_is_named_by_line_and_id(index_dir: Path, tmp_path: Path) -> None:
    new = write_jsonl(
        tmp_path / "new.jsonl",
        [
            {"_id": "n1", "text": "fine", "tags": ["a"]},
            {"_id": "n2", "text": "x", "tags": [1, "a"]},
        ],
    )
    message = error_line("add", index_dir, new)
    assert message.startswith(f"{new}: line 2 (_id 'n2'): field 'tags': "), message
    no_python_names(message)


def test_a_locked_index_is_told_in_the_command_lines_words(index_dir: Path, tmp_path: Path) -> None:
    new = write_jsonl(tmp_path / "new.jsonl", [{"_id": "n1", "text": "new"}])
    with HybridIndex.load(index_dir) as writer:
        writer.delete(["d1"])  # takes the write lock
        for argv in (("add", index_dir, new), ("delete", index_dir, "d2")):
            message = error_line(*argv)
            assert message.startswith(f"another writer holds the write lock of {index_dir} ")
            assert "hybrid-engine serve" in message
            no_python_names(message)


@pytest.mark.parametrize("where", ["before", "after"])
def test_debug_is_taken_before_or_after_the_command(index_dir: Path, where: str) -> None:
    argv = ["delete", str(index_dir), "nope"]
    argv = ["--debug", *argv] if where == "before" else [*argv, "--debug"]
    done = cli(*argv)
    assert done.returncode == 2
    assert done.stderr.startswith("Traceback (most recent call last):")
    assert re.search(r"^hybrid_engine\.errors\.UnknownIdError: ", done.stderr, re.MULTILINE)


def test_a_usage_error_is_one_line_naming_the_flag(index_dir: Path) -> None:
    message = error_line("search", index_dir, "cat", "--depth", "x")
    assert (
        message
        == "argument --depth: expected an integer >= 1, got 'x' (see hybrid-engine search --help)"
    )
    done = cli("index", "c", "o", "--nope")  # the top parser reports what no parser took
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "hybrid-engine: error: unrecognized arguments: --nope (see hybrid-engine --help)\n"
    )
