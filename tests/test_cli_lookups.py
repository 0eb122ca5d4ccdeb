"""``hybrid-engine info`` and ``get`` (issue 24's look-ups), and ``index --force`` replacing
an index, run as separate processes on BM25-only indexes; the figures are checked against the
Python API and the files on disk."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_process import error_line, json_lines, ok, write_jsonl

from hybrid_engine import HybridIndex

BASE = [
    {"_id": "d1", "title": "Cats", "text": "The cat sat on the mat.", "year": 2019},
    {"_id": "d2", "title": "", "text": "A dog chased the cat.", "metadata": {"tags": ["pet"]}},
    {"_id": "d3", "title": "Birds", "text": "Birds fly over the sea."},
]
NEW = [{"_id": "n1", "title": "Zebras", "text": "Zebras graze on the savanna."}]
BM25 = ("--retrievers", "bm25", "--quiet")


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    path = tmp_path / "idx"
    ok("index", write_jsonl(tmp_path / "base.jsonl", BASE), path, *BM25)
    return path


def disk_bytes(folder: Path) -> int:
    return sum((Path(p) / f).stat().st_size for p, _, files in os.walk(folder) for f in files)


def test_info_tells_documents_segments_legs_and_sizes(index_dir: Path, tmp_path: Path) -> None:
    ok("add", index_dir, write_jsonl(tmp_path / "new.jsonl", NEW))
    ok("delete", index_dir, "d1")
    facts = json.loads(ok("info", index_dir, "--json"))
    engine = HybridIndex.load(index_dir)
    assert facts["documents"] == len(engine) == 3
    assert facts["documents"] + facts["deleted"] == len(engine.doc_ids)  # deleted: until a merge
    assert (facts["segments"], facts["generation"]) == (engine.num_segments, engine.generation)
    assert facts["retrievers"] == list(engine.retrievers) == ["bm25"]
    assert facts["models"] == {}
    assert facts["phrases"] is False  # no --positions
    assert facts["bytes"]["total"] == disk_bytes(index_dir)
    legs = sum(disk_bytes(seg / "bm25") for seg in index_dir.glob("seg-*"))
    assert facts["bytes"]["bm25"] == legs
    assert facts["writer_holds_lock"] is False
    listing = ok("info", index_dir)
    assert "documents:   3" in listing and "segments:    " in listing
    assert "models:      none (BM25 needs no model)" in listing


def test_info_tells_whether_a_writer_holds_the_lock(index_dir: Path) -> None:
    with HybridIndex.load(index_dir) as writer:
        writer.delete(["d1"])  # takes the write lock
        assert json.loads(ok("info", index_dir, "--json"))["writer_holds_lock"] is True
        assert "writer:      a writer holds the write lock" in ok("info", index_dir)
    assert json.loads(ok("info", index_dir, "--json"))["writer_holds_lock"] is False


def test_info_of_a_folder_without_an_index(tmp_path: Path) -> None:
    assert "holds no commit point" in error_line("info", tmp_path)


def test_get_prints_the_documents_in_the_order_asked(index_dir: Path) -> None:
    docs = json_lines(ok("get", index_dir, "d3", "d1", "--json"))
    assert docs == [
        {"id": "d3", "title": "Birds", "text": "Birds fly over the sea.", "metadata": {}},
        {
            "id": "d1",
            "title": "Cats",
            "text": "The cat sat on the mat.",
            "metadata": {"year": 2019},
        },
    ]
    listing = ok("get", index_dir, "d2")
    assert (
        listing == 'id: d2\ntitle: \ntext: A dog chased the cat.\nmetadata: {"tags": ["pet"]}\n\n'
    )
    assert json_lines(ok("get", index_dir, "nope", "d2", "--json", "--missing-ok"))[0]["id"] == "d2"


def test_index_refuses_an_existing_output_without_force(index_dir: Path, tmp_path: Path) -> None:
    new = write_jsonl(tmp_path / "new.jsonl", NEW)
    message = error_line("index", new, index_dir, *BM25)
    assert message == (
        f"{index_dir} exists and is not empty; pass --force (or --overwrite) to replace the "
        "index there, or choose another output"
    )
    assert len(HybridIndex.load(index_dir)) == 3


@pytest.mark.parametrize("flag", ["--force", "--overwrite"])
def test_force_replaces_the_index(index_dir: Path, tmp_path: Path, flag: str) -> None:
    new = write_jsonl(tmp_path / "new.jsonl", NEW)
    ok("index", new, index_dir, *BM25, flag)
    engine = HybridIndex.load(index_dir)
    assert [hit.id for hit in engine.get(["n1", "d1"], missing_ok=True)] == ["n1"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.jsonl", "idx", "new.jsonl"]


def test_force_keeps_the_old_index_when_the_build_fails(index_dir: Path, tmp_path: Path) -> None:
    new = write_jsonl(tmp_path / "new.jsonl", NEW)
    assert "dense" in error_line("index", new, index_dir, *BM25, "--force", "--m", "32")
    assert len(HybridIndex.load(index_dir)) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base.jsonl", "idx", "new.jsonl"]


def test_force_never_replaces_what_is_not_an_index(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine")
    message = error_line("index", write_jsonl(tmp_path / "c.jsonl", NEW), folder, *BM25, "--force")
    assert message.startswith(f"{folder} is not a hybrid_engine index")
    assert (folder / "keep.txt").read_text() == "mine"


def test_force_waits_for_no_writer(index_dir: Path, tmp_path: Path) -> None:
    new = write_jsonl(tmp_path / "new.jsonl", NEW)
    with HybridIndex.load(index_dir) as writer:
        writer.delete(["d1"])  # takes the write lock
        message = error_line("index", new, index_dir, *BM25, "--force")
        assert message.startswith(f"another writer holds {index_dir / 'write.lock'}")
    assert len(HybridIndex.load(index_dir)) == 3
