"""How ``index`` and ``add`` read a corpus file (issue 24): documents with neither title nor
text (defect 5), ids by the one id rule (defect 9), a file that is not UTF-8 (defect 7), each a
one-line error naming the file, the 1-based line and the ``_id``; run as separate processes on
BM25-only indexes, and once on Cranfield with the default legs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_process import error_line, json_lines, ok, write_jsonl

from hybrid_engine import HybridIndex
from hybrid_engine.models.store import DEFAULT_MODEL

DOCS = [
    {"_id": "d1", "title": "Cats", "text": "The cat sat on the mat."},
    {"_id": "d2", "title": "Dogs", "text": "A dog chased the cat."},
    {"_id": "e1", "title": "", "text": ""},
    {"_id": "t1", "title": "Zebras of the savanna", "text": ""},
    {"_id": "e2", "title": "  ", "text": " \t"},
    {"_id": "d3", "title": "Birds", "text": "Birds fly over the sea."},
]
BM25 = ("--retrievers", "bm25", "--quiet")


def live_ids(path: Path) -> list[str]:
    """The ids of the index's last commit, read through the Python API."""
    engine = HybridIndex.load(path)
    return sorted(hit.id for hit in engine.get(list(engine.doc_ids), missing_ok=True))


def test_a_document_with_neither_title_nor_text_is_an_error_naming_line_and_id(
    tmp_path: Path,
) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", DOCS)
    message = error_line("index", corpus, tmp_path / "idx", *BM25)
    assert message == (
        f"{corpus}:3: document 'e1' has neither title nor text (and 1 more such), so there is "
        "nothing to index; give it some, or pass --skip-empty to leave such documents out"
    )
    assert not (tmp_path / "idx").exists()


def test_skip_empty_leaves_them_out_and_says_which(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", DOCS)
    out = ok("index", corpus, tmp_path / "idx", "--retrievers", "bm25", "--skip-empty")
    assert "indexed 4 documents (skipped 2 with neither title nor text: 'e1', 'e2')" in out
    assert live_ids(tmp_path / "idx") == ["d1", "d2", "d3", "t1"]


def test_a_title_without_text_is_indexed_by_its_title(tmp_path: Path) -> None:
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [DOCS[0], DOCS[3]])
    ok("index", corpus, tmp_path / "idx", *BM25)
    (listing,) = json_lines(ok("search", tmp_path / "idx", "zebras savanna", "--json"))
    assert [(hit["id"], hit["title"], hit["text"]) for hit in listing["hits"]] == [
        ("t1", "Zebras of the savanna", "")
    ]


def test_add_follows_the_same_rule(tmp_path: Path) -> None:
    ok("index", write_jsonl(tmp_path / "base.jsonl", DOCS[:2]), tmp_path / "idx", *BM25)
    new = write_jsonl(tmp_path / "new.jsonl", DOCS[2:])
    message = error_line("add", tmp_path / "idx", new)
    assert message.startswith(f"{new}:1: document 'e1' has neither title nor text")
    assert "--skip-empty" in message
    assert live_ids(tmp_path / "idx") == ["d1", "d2"]
    out = ok("add", tmp_path / "idx", new, "--skip-empty")
    assert out.startswith("added 2 document(s) (skipped 2 with neither title nor text: 'e1', ")
    assert live_ids(tmp_path / "idx") == ["d1", "d2", "d3", "t1"]


def test_the_ids_of_a_corpus_follow_the_id_rule(tmp_path: Path) -> None:
    cat = {"title": "", "text": "a cat"}
    for line_2, shown in (
        ({"_id": True, **cat}, '"_id" is bool (True), not a string or an integer'),
        ({"_id": "", **cat}, '"_id" is empty'),
        ({"_id": 1.5, **cat}, '"_id" is float (1.5), not a string or an integer'),
        ({"_id": " x", **cat}, "\"_id\" ' x' has leading or trailing whitespace"),
    ):
        corpus = write_jsonl(tmp_path / "corpus.jsonl", [DOCS[0], line_2])
        message = error_line("index", corpus, tmp_path / "idx", *BM25)
        assert message.startswith(f"{corpus}:2: {shown}; an id is a string of 1 to 512"), message
    # an integer is its decimal string, as the server and the Python API take it
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [DOCS[0], {"_id": 1408, **cat}])
    ok("index", corpus, tmp_path / "idx", *BM25)
    (doc,) = json_lines(ok("get", tmp_path / "idx", "1408", "--json"))
    assert doc["id"] == "1408"
    ok("delete", tmp_path / "idx", "1408")
    assert live_ids(tmp_path / "idx") == ["d1"]


def test_delete_ids_follow_the_id_rule(tmp_path: Path) -> None:
    ok("index", write_jsonl(tmp_path / "corpus.jsonl", DOCS[:2]), tmp_path / "idx", *BM25)
    assert error_line("delete", tmp_path / "idx", "d1", "").startswith("ID 2 is empty; an id is")
    message = error_line("delete", tmp_path / "idx", " d1")
    assert message.startswith("ID 1 ' d1' has leading or trailing whitespace")
    ids = tmp_path / "ids.txt"
    ids.write_text("d1\nd\x072\n", encoding="utf-8")
    message = error_line("delete", tmp_path / "idx", "--ids-file", ids)
    assert message.startswith(f"{ids}:2: the id 'd\\x072' holds a control character")
    assert live_ids(tmp_path / "idx") == ["d1", "d2"]


def test_a_line_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    """The bad byte sits on line 3, after a line longer than a text stream's read-ahead (a
    reader that decodes by blocks would blame line 1)."""
    corpus = tmp_path / "corpus.jsonl"
    first = json.dumps({"_id": "d1", "text": "long " * 4000}).encode()
    second = json.dumps({"_id": "d2", "text": "short"}).encode()
    third = b'{"_id": "d3", "text": "caf\xe9"}'
    corpus.write_bytes(b"\n".join([first, second, third, b""]))
    message = error_line("index", corpus, tmp_path / "idx", *BM25)
    column = third.index(b"\xe9") + 1
    assert message == f"{corpus}:3: not UTF-8 (byte 0xe9 at byte {column} of the line); save " + (
        "the file as UTF-8"
    )
    assert not (tmp_path / "idx").exists()


def test_cranfield_names_its_empty_documents(shared_data: Path, tmp_path: Path) -> None:
    """With the default legs: the error comes before any model is loaded."""
    folder = shared_data / "beir" / "cranfield"
    message = error_line("index", folder, tmp_path / "idx")
    assert message.startswith(f"{folder / 'corpus.jsonl'}:471: document '471' has neither")
    assert "(and 1 more such)" in message and "--skip-empty" in message


@pytest.mark.slow
def test_cranfield_indexes_with_the_default_legs_when_skipping_empty(
    shared_data: Path, tmp_path: Path, model_path: Path
) -> None:
    folder = shared_data / "beir" / "cranfield"
    out = ok("index", folder, tmp_path / "idx", "--skip-empty", "--threads", "2")
    assert "indexed 1398 documents (skipped 2 with neither title nor text: '471', '995')" in out
    facts = json.loads(ok("info", tmp_path / "idx", "--json"))
    assert (facts["documents"], facts["retrievers"]) == (1398, ["bm25", "dense"])
    assert facts["models"] == {"dense": {"name": DEFAULT_MODEL, "variant": "int8"}}
    (listing,) = json_lines(ok("search", tmp_path / "idx", "boundary layer", "--json", "-k", "3"))
    assert len(listing["hits"]) == 3
