"""Writes that cannot hurt a user's data (issue 24): every document checked when it is staged
(what a commit would refuse is refused by ``add``/``upsert`` at once, naming the ``_id``, with
nothing staged), ``rollback`` and the staged counts, one rule for ids at every door of the
engine, generated ids that never collide with a user's, and documents with a title alone."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dense_oracle import HashingEncoder
from live_oracle import QUERIES, document, live_documents, new_engine
from tokenizers import Tokenizer

from hybrid_engine import (
    DegradedEngineError,
    DegradedWarning,
    DuplicateIdError,
    Encoder,
    ParentDocumentIndex,
    PinnedEngineError,
    StagedChanges,
    UnknownIdError,
)
from hybrid_engine.chunking import Chunker
from hybrid_engine.engine.index import HybridIndex


def numbered(n: int, start: int = 1) -> list[dict[str, Any]]:
    """``n`` documents whose ids are numbers from ``start``, as a user of a numbered corpus
    (Cranfield's "1".."1400") gives them."""
    return [
        {"_id": str(i), "text": f"{document(i)['text']} item{i}", "metadata": {"n": i}}
        for i in range(start, start + n)
    ]


def same_search(engine: HybridIndex, before: Any) -> None:
    after = engine.search(QUERIES, 5)
    np.testing.assert_array_equal(after.ids, before.ids)
    np.testing.assert_array_equal(after.scores, before.scores)
    assert after.doc_ids == before.doc_ids


# -- validation at staging (defect 2) ---------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n\t"])
def test_a_blank_document_is_refused_when_staged_not_at_commit(encoder: Encoder, text: str) -> None:
    """The issue's case: ``{"_id": "e1", "text": ""}`` on a BM25 + dense index was staged, and
    every later commit failed in the encoder."""
    engine = HybridIndex.build(numbered(5), retrievers=("bm25", "dense"), encoder=encoder)
    with pytest.raises(ValueError, match=r"document 'e1' has no title and no text"):
        engine.add([{"_id": "e1", "text": text}])
    assert engine.staged == StagedChanges(0, 0) and not engine.has_staged
    with pytest.raises(ValueError, match=r"document 'e1' has no title and no text"):
        engine.upsert([{"_id": "e1", "text": text}])
    engine.add([{"_id": "e2", "text": "a valid document"}])
    engine.commit()  # never blocked by the refused one
    assert len(engine) == 6 and engine.holds(["e2", "e1"]) == [True, False]


def test_a_batch_with_one_bad_document_stages_nothing() -> None:
    engine = new_engine([document(i) for i in range(6)])
    before = engine.search(QUERIES, 5)
    batch = [document(10), {"_id": "d3", "title": " ", "text": ""}, document(11)]
    with pytest.raises(ValueError, match=r"document 'd3' has no title and no text \(number 2 "):
        engine.upsert(batch)
    assert engine.staged == StagedChanges(0, 0)  # nor is d3 staged for deletion
    engine.commit()
    same_search(engine, before)
    assert engine.add([document(10), document(11)]) == ["d10", "d11"]


def test_a_lone_surrogate_is_refused_when_staged_not_at_commit() -> None:
    """BM25's analyzer (and the tokenizers) cannot read a lone surrogate: the add used to be
    staged and the commit to fail."""
    engine = new_engine([document(i) for i in range(4)])
    for doc in (
        {"_id": "s1", "text": "river \ud800 stone"},
        {"_id": "s1", "title": "bad \udc80", "text": "river stone"},
    ):
        with pytest.raises(ValueError, match=r"document 's1' is not valid Unicode"):
            engine.add([document(20), doc])
        assert engine.staged == StagedChanges(0, 0)
    engine.add([document(20)])
    engine.commit()
    assert engine.holds(["d20", "s1"]) == [True, False]


@pytest.mark.parametrize(
    "metadata, error, reason",
    [
        ({"year": 2**60}, ValueError, r"field 'year': the int .* lies outside"),
        ({"year": float("nan")}, ValueError, r"field 'year': nan is not a finite float"),
        ({"tags": ["a", 1]}, TypeError, r"field 'tags': the list mixes str and int"),
        ({"$or": 1}, ValueError, r"field name '\$or' must be"),
        ({"nested": {"a": 1}}, TypeError, r"field 'nested': dict"),
    ],
)
def test_a_bad_metadata_value_names_the_document_id(
    metadata: dict[str, Any], error: type[Exception], reason: str
) -> None:
    engine = new_engine([document(i) for i in range(4)])
    batch = [document(10), {"_id": "m7", "text": "river", "metadata": metadata}]
    with pytest.raises(error, match=rf"^document 'm7' \(number 2 of those given\): {reason}"):
        engine.add(batch)
    assert engine.staged == StagedChanges(0, 0)


def test_a_field_of_another_kind_than_the_committed_one_commits() -> None:
    """Kinds are kept per value, so a str where committed documents hold ints is no reason to
    refuse a document, at staging or at commit."""
    engine = new_engine([document(i) for i in range(4)])  # "group" holds ints
    engine.add([{"_id": "k1", "text": "river", "metadata": {"group": "north"}}])
    engine.commit()
    assert engine.get(["k1", "d1"])[0].metadata == {"group": "north"}
    assert engine.get(["d1"])[0].metadata["group"] == 1


# -- rollback and the staged counts -----------------------------------------------------------


def test_rollback_drops_every_staged_change() -> None:
    engine = new_engine([document(i) for i in range(8)])
    before = engine.search(QUERIES, 5)
    assert engine.add([document(20), document(21)]) == ["d20", "d21"]
    assert engine.upsert([document(2, version=1)]) == ["d2"]  # replaces a committed one
    assert engine.delete(["d5", "d21"]) == 2  # a committed one and a staged one
    assert engine.staged == StagedChanges(added=2, deleted=2)  # d20, d2 / d2's old, d5
    assert engine.rollback() == StagedChanges(added=2, deleted=2)
    assert engine.staged == StagedChanges(0, 0) and not engine.has_staged
    assert not engine.rollback()  # nothing left to drop
    same_search(engine, before)
    engine.commit()  # commits nothing
    same_search(engine, before)
    assert [d["_id"] for d in live_documents(engine)] == [f"d{i}" for i in range(8)]
    assert engine.add([document(20)]) == ["d20"]  # the dropped id is free again
    assert engine.delete(["d5"]) == 1
    assert engine.staged == StagedChanges(added=1, deleted=1)
    engine.commit()
    assert engine.staged == StagedChanges(0, 0)
    assert engine.holds(["d20", "d5", "d2"]) == [True, False, True]
    assert engine.get(["d2"])[0].text == document(2)["text"]  # the upsert was dropped


def test_rollback_leaves_the_index_directory_at_its_last_commit(tmp_path: Path) -> None:
    engine = new_engine([document(i) for i in range(5)])
    engine.save(tmp_path / "live")
    engine.add([document(9)])
    engine.delete(["d0"])
    generation = engine.generation
    engine.rollback()
    engine.commit()
    engine.close()
    again = HybridIndex.load(tmp_path / "live", encoder=HashingEncoder())
    assert again.generation == generation
    assert [d["_id"] for d in live_documents(again)] == [f"d{i}" for i in range(5)]


def test_rollback_on_a_pinned_engine_is_refused() -> None:
    engine = new_engine([document(i) for i in range(4)])
    engine.add([document(9)])
    with pytest.raises(PinnedEngineError, match="pinned"):
        engine.pinned().rollback()
    assert engine.staged == StagedChanges(added=1, deleted=0)


def test_rollback_on_a_degraded_engine_is_refused(
    model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoder = Encoder.load(model_path.name, variant="int8")  # a prepared model, by name
    docs = [document(i) for i in range(4)]
    HybridIndex.build(docs, retrievers=("bm25", "dense"), encoder=encoder).save(tmp_path / "ix")
    monkeypatch.setenv("HYBRID_ENGINE_MODELS", str(tmp_path / "no-models"))
    with pytest.warns(DegradedWarning):
        engine = HybridIndex.load(tmp_path / "ix", allow_degraded=True)
    assert engine.degraded == ("dense",)
    with pytest.raises(DegradedEngineError, match="without its dense leg"):
        engine.rollback()


# -- ids: one rule (defect 9) and generated ids (defect 1) -------------------------------------


@pytest.mark.parametrize(
    "bad, error, reason",
    [
        (True, TypeError, "is bool"),
        ("", ValueError, "is empty"),
        (" d1", ValueError, "leading or trailing whitespace"),
        ("a\nb", ValueError, "control character"),
        ("x" * 513, ValueError, "513 characters"),
        pytest.param(10**512, ValueError, "more than 512 digits", id="513-digit-int"),
        ("a\ud800b", ValueError, "lone surrogate"),
        (1.5, TypeError, "is float"),
    ],
)
def test_a_bad_id_is_refused_by_build_add_and_upsert(
    bad: Any, error: type[Exception], reason: str
) -> None:
    docs = [document(0), {"_id": bad, "text": "river"}]
    with pytest.raises(error, match=rf"^document number 2 field '_id' .*{reason}"):
        new_engine(docs)
    engine = new_engine([document(0)])
    for write in (engine.add, engine.upsert):
        with pytest.raises(error, match=reason):
            write(docs[1:])
    assert engine.staged == StagedChanges(0, 0)


def test_an_int_id_is_its_decimal_string_at_every_door() -> None:
    engine = HybridIndex.build(
        [{"_id": 7, "text": "river stone"}, {"_id": "8", "text": "cat"}],
        retrievers=("bm25",),
    )
    assert list(engine.doc_ids) == ["7", "8"]
    assert engine.add([{"_id": 1408, "text": "wing flutter"}]) == ["1408"]
    with pytest.raises(DuplicateIdError, match="'1408'"):
        engine.add([{"_id": "1408", "text": "again"}])
    with pytest.raises(DuplicateIdError, match="'9' is given twice"):
        engine.add([{"_id": 9, "text": "a"}, {"_id": "9", "text": "b"}])
    engine.commit()
    assert engine.holds([1408, "1408", 7, 99]) == [True, True, True, False]
    assert [hit.id for hit in engine.get([1408, "7"])] == ["1408", "7"]
    assert engine.search(["flutter"], 1).doc_ids == [["1408"]]
    assert engine.delete([8]) == 1
    engine.commit()
    assert engine.holds(["8"]) == [False]


@pytest.mark.parametrize("method", ["delete", "holds", "get"])
def test_ids_that_break_the_rule_are_refused_by_delete_holds_and_get(method: str) -> None:
    engine = new_engine([document(i) for i in range(3)])
    call = getattr(engine, method)
    with pytest.raises(TypeError, match=r"ids\[1\] is bool"):
        call(["d0", True])
    with pytest.raises(ValueError, match=r"ids\[0\] is empty"):
        call([""])
    with pytest.raises(TypeError, match=r"single id 'd0'.*\['d0'\]"):
        call("d0")
    assert engine.staged == StagedChanges(0, 0)
    if method == "holds":
        assert call(["d0", 12]) == [True, False]  # an int is an id, just not this index's
    else:
        with pytest.raises(UnknownIdError, match="'12'"):
            call(["d0", 12])


def test_generated_ids_never_collide_with_numbered_ids() -> None:
    """A corpus numbered "1".."20", as the old counter numbered documents: three documents
    without ``_id`` get three fresh UUID4 ids (the old code named them "20", "21", "22",
    and "20" is the user's)."""
    engine = HybridIndex.build(numbered(20), retrievers=("bm25",))
    ids = engine.add([{"text": f"new document {i}"} for i in range(3)])
    assert len(ids) == 3 and len(set(ids)) == 3
    assert not set(ids) & {str(i) for i in range(1, 21)}
    for doc_id in ids:
        assert uuid.UUID(doc_id).version == 4 and str(uuid.UUID(doc_id)) == doc_id
    engine.commit()
    assert len(engine) == 23 and engine.holds(ids) == [True] * 3
    assert [hit.text for hit in engine.get(ids)] == [f"new document {i}" for i in range(3)]


def test_an_upsert_without_id_never_replaces_a_document() -> None:
    """The old code named a document without ``_id`` by the counter, so an upsert silently
    replaced the user's document "20"."""
    users = numbered(20)
    engine = HybridIndex.build(users, retrievers=("bm25",))
    staged = engine.upsert([{"text": "a document without id"}])
    engine.commit()
    assert len(engine) == 21
    kept = engine.get([doc["_id"] for doc in users])
    assert [(hit.id, hit.text) for hit in kept] == [(d["_id"], d["text"]) for d in users]
    assert staged[0] not in {d["_id"] for d in users}
    assert engine.get(staged)[0].text == "a document without id"


# -- a title alone, neither title nor text (defect 5) -----------------------------------------


@pytest.mark.parametrize("retrievers", [("bm25",), ("bm25", "dense")])
def test_a_document_with_neither_title_nor_text_is_refused_by_build(
    retrievers: tuple[str, ...],
) -> None:
    """Cranfield's documents 471 and 995: ``{"_id": "471", "title": "", "text": ""}``. The
    message names the ``_id`` and the 1-based number, whatever the retrievers (BM25 alone
    used to index it; with a dense leg the message named a 0-based position)."""
    corpus = [*numbered(3, start=468), {"_id": "471", "title": "", "text": ""}, *numbered(1)]
    with pytest.raises(
        ValueError, match=r"^document '471' has no title and no text \(number 4 of those given\)"
    ):
        HybridIndex.build(corpus, retrievers=retrievers, encoder=HashingEncoder())
    engine = HybridIndex.build(numbered(3), retrievers=retrievers, encoder=HashingEncoder())
    for write in (engine.add, engine.upsert):
        with pytest.raises(ValueError, match=r"^document '471' has no title and no text"):
            write([{"_id": "471", "title": "  ", "text": None}])
        with pytest.raises(ValueError, match=r"^document number 2 has no title and no text"):
            write([document(5), {"text": " "}])
    assert engine.staged == StagedChanges(0, 0)


@pytest.mark.parametrize("text", ["", None])
def test_a_title_alone_is_indexed_and_found_by_a_title_word(text: str | None) -> None:
    """A document with a title and an empty (or null) text is indexed by its title, in BM25
    and in the dense leg; a null text is no text (it was indexed as the word "None")."""
    docs = [document(i) for i in range(10)]
    titled = {"_id": "t1", "title": "Flutter of a swept wing", "text": text}
    engine = HybridIndex.build(
        [*docs, titled], retrievers=("bm25", "dense"), encoder=HashingEncoder()
    )
    engine.add([{**titled, "_id": "t2", "title": "Supersonic flutter"}])
    engine.commit()
    assert [hit.text for hit in engine.get(["t1", "t2"])] == ["", ""]
    snapshot = engine._state.snapshot
    lexical = snapshot.search_bm25(["flutter"], 2, 1, list(snapshot.live))
    assert {snapshot.doc_ids[int(i)] for i in lexical.ids[0]} == {"t1", "t2"}
    assert (snapshot.search_bm25(["none"], 2, 1, list(snapshot.live)).ids == -1).all()
    # The hashing encoder embeds a text by its words, so the title's words are its nearest.
    dense = HybridIndex.build(
        [*docs, titled], retrievers=("dense",), encoder=HashingEncoder(dim=256)
    )
    assert dense.search(["swept wing flutter of a"], 1).doc_ids == [["t1"]]


def test_commit_points_keep_next_id_for_earlier_releases_and_load_without_it(
    tmp_path: Path,
) -> None:
    """``next_id`` names no document any more; new commit points still write it (earlier
    releases of this format require the key), never below the documents they hold, and a
    commit point without it loads."""
    engine = new_engine([document(i) for i in range(6)])
    engine.save(tmp_path / "live")
    engine.add([{"text": "no id"}, document(7)])
    engine.commit()
    engine.close()
    (point,) = sorted((tmp_path / "live").glob("commit-*.json"))
    values = json.loads(point.read_text(encoding="utf-8"))
    assert isinstance(values["next_id"], int) and values["next_id"] >= 8
    del values["next_id"]
    point.write_text(json.dumps(values), encoding="utf-8")
    again = HybridIndex.load(tmp_path / "live", encoder=HashingEncoder())
    assert len(again) == 8 and again.holds(["d7"]) == [True]


def test_parent_documents_follow_the_same_rules(model_path: Path) -> None:
    """A parent with neither title nor text is refused naming the parent (not its chunk), one
    with a title alone is found by it, and ids follow the one rule; ``add``/``upsert`` return
    the parent ids staged."""
    tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    tokenizer.no_truncation()
    chunker = Chunker(tokenizer, max_tokens=12, overlap_tokens=5)
    docs = [{**document(i), "metadata": {}} for i in range(4)]
    index = ParentDocumentIndex.build(
        docs, chunker=chunker, retrievers=("bm25",), encoder=HashingEncoder()
    )
    for write in (index.add, index.upsert):
        with pytest.raises(ValueError, match=r"^document 'p9' has no title and no text"):
            write([{"_id": "p9", "title": "", "text": "  "}])
        with pytest.raises(ValueError, match="is empty"):
            write([{"_id": "", "text": "river"}])
    assert index.add([{"_id": 7, "title": "Flutter of a swept wing", "text": ""}]) == ["7"]
    assert index.upsert([document(1, version=1)]) == ["d1"]
    index.commit()
    assert index.search(["flutter"], 1).ids == [["7"]]
    assert index.delete([7]) == 1
