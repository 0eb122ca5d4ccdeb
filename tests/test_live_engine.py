"""The live engine: add / upsert / delete / commit / merge, each state equal to a fresh build of
its live documents; hits with metadata; staged changes invisible until commit; errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from dense_oracle import HashingEncoder
from live_oracle import (
    QUERIES,
    assert_bm25_equals_fresh,
    assert_hybrid_equals_fresh,
    assert_splade_equals_fresh,
    document,
    live_documents,
    new_engine,
)
from sparse_oracle import HashingSparseEncoder

from hybrid_engine import IndexFormatError, UnknownIdError
from hybrid_engine.engine.index import HybridIndex


def test_staged_changes_are_invisible_until_commit() -> None:
    engine = new_engine([document(i) for i in range(20)])
    before = engine.search(QUERIES, 5)
    engine.add([document(i) for i in range(20, 30)])
    engine.delete(["d0", "d1"])
    during = engine.search(QUERIES, 5)
    np.testing.assert_array_equal(during.ids, before.ids)
    assert len(engine) == 20
    engine.commit()
    assert len(engine) == 28 and engine.num_segments == 2
    found = {doc_id for row in engine.search(QUERIES, 28).doc_ids for doc_id in row}
    assert "d0" not in found and "d1" not in found
    assert_hybrid_equals_fresh(engine)
    assert_bm25_equals_fresh(engine)


def test_every_state_equals_a_fresh_build() -> None:
    engine = new_engine([document(i) for i in range(12)], splade=True)
    steps = [
        lambda e: e.add([document(i) for i in range(12, 20)]),
        lambda e: e.delete(["d3", "d14", "d7"]),
        lambda e: e.upsert([document(5, version=1), document(40)]),
        lambda e: e.delete([f"d{i}" for i in range(8, 12)]),
        lambda e: e.add([document(i) for i in range(50, 53)]),
    ]
    for step in steps:
        step(engine)
        engine.commit()
        assert_bm25_equals_fresh(engine)
        assert_splade_equals_fresh(engine)
        assert_hybrid_equals_fresh(engine)
    segments = engine.num_segments
    engine.merge()
    assert engine.num_segments == 1 < segments
    assert_bm25_equals_fresh(engine)
    assert_splade_equals_fresh(engine)
    assert_hybrid_equals_fresh(engine)


def test_hits_carry_ids_titles_texts_and_metadata() -> None:
    engine = new_engine([document(i) for i in range(10)])
    result = engine.search(["river stone"], 3)
    hits = result.hits()[0]
    assert [hit.id for hit in hits] == result.doc_ids[0]
    for hit in hits:
        i = int(hit.id[1:])
        source = document(i)
        assert (hit.title, hit.text, hit.metadata) == (
            source["title"],
            source["text"],
            source["metadata"],
        )


def test_upsert_replaces_and_moves_to_the_end() -> None:
    engine = new_engine([document(i) for i in range(6)])
    engine.upsert([document(2, version=3)])
    engine.commit()
    docs = live_documents(engine)
    assert [d["_id"] for d in docs] == ["d0", "d1", "d3", "d4", "d5", "d2"]
    assert docs[-1]["metadata"]["v"] == 3
    assert len(engine) == 6


def test_add_and_delete_errors_name_the_ids() -> None:
    engine = new_engine([document(i) for i in range(5)])
    with pytest.raises(ValueError, match=r"already in the index.*'d1'.*upsert"):
        engine.add([document(1)])
    with pytest.raises(ValueError, match="'d9' is given twice"):
        engine.add([document(9), document(9)])
    engine.add([document(7)])
    with pytest.raises(ValueError, match=r"already in the index.*'d7'"):
        engine.add([document(7)])  # staged counts too
    with pytest.raises(KeyError, match=r"not in the index.*'nope'.*missing_ok"):
        engine.delete(["d2", "nope"])
    assert engine.delete(["d2", "nope"], missing_ok=True) == 1
    assert engine.delete(["d7"]) == 1  # a staged document
    engine.commit()
    assert sorted(d["_id"] for d in live_documents(engine)) == ["d0", "d1", "d3", "d4"]
    with pytest.raises(TypeError, match=r"ids\[0\] is bool"):
        engine.delete([True])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"ids\[1\] is empty"):
        engine.delete(["d0", ""])


def test_deleting_everything_leaves_an_empty_index_that_grows_again() -> None:
    engine = new_engine([document(i) for i in range(4)], splade=True)
    engine.delete([f"d{i}" for i in range(4)])
    engine.commit()
    assert len(engine) == 0 and engine.num_segments == 0
    result = engine.search(QUERIES, 3)
    assert (result.ids == -1).all() and result.doc_ids == [[]] * len(QUERIES)
    engine.add([document(i) for i in range(10, 16)])
    engine.commit()
    assert_bm25_equals_fresh(engine)
    assert_splade_equals_fresh(engine)


def test_reopen_gives_the_last_commit(tmp_path: Path) -> None:
    engine = new_engine([document(i) for i in range(10)], splade=True)
    path = tmp_path / "live"
    engine.save(path)
    engine.add([document(i) for i in range(10, 15)])
    engine.delete(["d2"])
    engine.commit()
    engine.add([document(99)])  # staged, never committed
    expected = engine.search(QUERIES, 8)
    engine.close()
    again = HybridIndex.load(path, encoder=HashingEncoder(), splade_encoder=HashingSparseEncoder())
    got = again.search(QUERIES, 8)
    assert got.doc_ids == expected.doc_ids
    np.testing.assert_array_equal(got.scores, expected.scores)
    assert len(again) == 14
    assert_bm25_equals_fresh(again)
    assert_splade_equals_fresh(again)
    again.merge()
    again.close()
    merged = HybridIndex.load(path, encoder=HashingEncoder(), splade_encoder=HashingSparseEncoder())
    assert merged.num_segments == 1
    assert merged.search(QUERIES, 8).doc_ids == expected.doc_ids


def test_the_merge_policy_keeps_segments_few() -> None:
    engine = new_engine([document(0)])
    for i in range(1, 25):
        engine.add([document(i)])
        engine.commit()
    assert engine.num_segments <= engine._state.policy.max_segments
    assert_bm25_equals_fresh(engine)
    assert_hybrid_equals_fresh(engine)


def test_a_segment_with_many_deletions_is_rewritten() -> None:
    engine = new_engine([document(i) for i in range(10)])
    engine.delete(["d0", "d1", "d2"])  # 30% of the segment
    engine.commit()
    assert engine.num_segments == 1 and engine._state.snapshot.live[0] is None
    assert_bm25_equals_fresh(engine)


def test_an_index_of_the_immutable_format_is_refused_with_the_rebuild(tmp_path: Path) -> None:
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "manifest.json").write_text(
        json.dumps({"format": "hybrid_engine.hybrid", "format_version": 3})
    )
    with pytest.raises(IndexFormatError, match=r"immutable format.*rebuild it.*save\(new_path\)"):
        HybridIndex.load(folder, encoder=HashingEncoder())


def test_save_needs_a_new_or_empty_directory(tmp_path: Path) -> None:
    engine = new_engine([document(i) for i in range(3)])
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not empty"):
        engine.save(tmp_path / "full")
    assert (tmp_path / "full" / "notes.txt").read_text() == "mine"
    (tmp_path / "empty").mkdir()
    engine.save(tmp_path / "empty")
    assert engine.path == tmp_path / "empty"


def test_get_returns_the_committed_documents_in_the_order_asked() -> None:
    engine = new_engine([document(i) for i in range(8)])
    engine.delete(["d3"])
    engine.upsert([document(5, version=2)])
    engine.add([document(20)])
    engine.commit()
    engine.add([document(30)])  # staged, not committed: get does not see it
    sources = {"d0": document(0), "d5": document(5, version=2), "d20": document(20)}
    sources["d7"] = document(7)
    asked = ["d20", "d0", "d7", "d5", "d0"]
    hits = engine.get(asked)
    assert [hit.id for hit in hits] == asked
    for hit in hits:
        source = sources[hit.id]
        assert (hit.title, hit.text, hit.metadata) == (
            source["title"],
            source["text"],
            source["metadata"],
        )
        assert math.isnan(hit.score)
    assert engine.get([]) == []
    for unknown in ("d3", "d30", "nope"):  # deleted, staged only, never added
        with pytest.raises(UnknownIdError) as raised:
            engine.get(["d0", unknown, "also-unknown"])
        message = str(raised.value)  # the message itself, not a KeyError's repr of it
        assert message.startswith(f"document id '{unknown}' is not in the index")
        assert "missing_ok=True" in message and "also-unknown" not in message
    with pytest.raises(KeyError):  # an UnknownIdError is a KeyError
        engine.get(["nope"])
    found = engine.get(["d3", "d7", "d30", "d0"], missing_ok=True)
    assert [hit.id for hit in found] == ["d7", "d0"]
    with pytest.raises(TypeError, match=r"use \['d1'\]"):
        engine.get("d1")
    with pytest.raises(TypeError, match=r"ids\[1\] is bool"):
        engine.get(["d1", False])  # type: ignore[list-item]
    engine.commit()
    assert [hit.id for hit in engine.get(["d30"])] == ["d30"]  # visible once committed
