"""ParentDocumentIndex against independent references: brute-force aggregation of an
exhaustive chunk ranking, fresh builds of the final documents, brute-force filtering, the
parent texts the spans index, the token budget recounted in the test's own tokenizer, and the
documents put in (``get``, ``holds``, ``staged``, ``rollback``, ``merge``)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dense_oracle import HashingEncoder
from tokenizers import Tokenizer

from hybrid_engine import (
    DuplicateIdError,
    Hit,
    HybridIndex,
    IndexFormatError,
    ParentDocumentIndex,
    StagedChanges,
    UnknownIdError,
)
from hybrid_engine.chunking import Chunker

WORDS = (
    "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow leaf rock "
    "sand wave hill"
).split()
QUERIES = ["cat on the mat", "river stone", "snow and wind fire", "moon", "wave sand hill"]


@pytest.fixture(scope="module")
def counter(model_path: Path) -> Tokenizer:
    """The test's own counting tokenizer (the bi-encoder's file, never truncating)."""
    tok = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


@pytest.fixture(scope="module")
def chunker(counter: Tokenizer) -> Chunker:
    """A small budget, so that a few sentences make several overlapping chunks."""
    return Chunker(counter, max_tokens=12, overlap_tokens=5)


def sentence(rng: np.random.Generator) -> str:
    words = [str(w) for w in rng.choice(WORDS, size=int(rng.integers(2, 6)))]
    return " ".join(words).capitalize() + "."


def document(i: int, n_sentences: int, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng([i, seed])
    text = "  ".join(sentence(rng) for _ in range(n_sentences))
    return {
        "_id": f"p{i}",
        "title": WORDS[i % len(WORDS)],
        "text": f" {text}\n" if i % 3 == 0 else text,
        "metadata": {"group": i % 3, "lang": ["en", "fr"][i % 2]},
    }


def corpus(n: int = 12) -> list[dict[str, Any]]:
    return [document(i, 1 + i % 5) for i in range(n)]


def build(docs: list[dict[str, Any]], chunker: Chunker, **options: Any) -> ParentDocumentIndex:
    options.setdefault("retrievers", ("bm25", "dense"))
    options.setdefault("encoder", HashingEncoder())
    return ParentDocumentIndex.build(docs, chunker=chunker, **options)


def chunk_ranking(index: ParentDocumentIndex, **options: Any) -> list[list[Any]]:
    """Every chunk of the inner engine, ranked: (parent, position, start, end, score)."""
    n = len(index.engine)
    result = index.engine.search(QUERIES, n, **options)
    return [
        [
            (
                h.metadata["_chunk.parent"],
                h.metadata["_chunk.position"],
                h.metadata["_chunk.start"],
                h.metadata["_chunk.end"],
                h.score,
            )
            for h in row
        ]
        for row in result.hits()
    ]


def brute_force(row: list[Any], aggregate: str) -> list[tuple[str, float]]:
    """Parents by max / sum / first-chunk score; ties by the parent's best chunk's rank."""
    first_rank: dict[str, int] = {}
    scores: dict[str, list[tuple[int, float]]] = {}
    for rank, (parent, position, _, _, score) in enumerate(row):
        first_rank.setdefault(parent, rank)
        scores.setdefault(parent, []).append((position, score))
    out = []
    for parent, pairs in scores.items():
        if aggregate == "max":
            value = max(s for _, s in pairs)
        elif aggregate == "sum":
            value = sum(s for _, s in pairs)
        else:
            zero = [s for p, s in pairs if p == 0]
            if not zero:
                continue
            value = zero[0]
        out.append((parent, value))
    out.sort(key=lambda item: (-item[1], first_rank[item[0]]))
    return out


def assert_same_documents(got: Any, expected: list[list[tuple[str, float]]]) -> None:
    assert [[h.id for h in row] for row in got.documents] == [[p for p, _ in r] for r in expected]
    for row, ref in zip(got.documents, expected, strict=True):
        np.testing.assert_allclose([h.score for h in row], [s for _, s in ref], rtol=1e-6)


def test_the_collection_is_cut_in_several_chunks(chunker: Chunker) -> None:
    index = build(corpus(), chunker)
    assert len(index) == 12 and len(index.engine) >= 20
    chunks = chunker.chunk_documents(corpus())
    pairs = itertools.pairwise(chunks)
    assert any(a.parent_id == b.parent_id and b.start < a.end for a, b in pairs)  # overlaps


@pytest.mark.parametrize("aggregate", ["max", "sum", "first"])
def test_document_ranking_equals_brute_force_aggregation(chunker: Chunker, aggregate: str) -> None:
    docs = corpus()
    texts = {d["_id"]: d["text"] for d in docs}
    index = build(docs, chunker)
    n_chunks = len(index.engine)
    got = index.search(QUERIES, 12, aggregate=aggregate, chunk_depth=n_chunks)
    ranking = chunk_ranking(index)
    assert_same_documents(got, [brute_force(row, aggregate) for row in ranking])
    for row, chunks in zip(got.documents, ranking, strict=True):
        for hit in row:
            source = next(d for d in docs if d["_id"] == hit.id)
            assert hit.text == texts[hit.id] and hit.title == source["title"]
            assert hit.metadata == source["metadata"]
            mine = [(s, e) for p, _, s, e, _ in chunks if p == hit.id]
            covered = set().union(*(range(s, e) for s, e in mine))
            assert set().union(*(range(s, e) for s, e in hit.spans)) == covered
            assert all(a[1] < b[0] for a, b in zip(hit.spans, hit.spans[1:]))  # merged
            assert len(hit.chunk_ids) == len(mine)


def test_chunk_hits_index_the_parent_text(chunker: Chunker) -> None:
    docs = corpus()
    texts = {d["_id"]: d["text"] for d in docs}
    index = build(docs, chunker)
    got = index.search(QUERIES, 7, unit="chunks")
    assert got.documents is None and got.chunks is not None
    ranking = chunk_ranking(index)
    for row, ref in zip(got.chunks, ranking, strict=True):
        assert [(c.parent_id, c.position, c.start, c.end) for c in row] == [r[:4] for r in ref[:7]]
        for c in row:
            assert texts[c.parent_id][c.start : c.end] == c.text
            assert c.id == f"{c.parent_id}#{c.position}"
    assert got.ids == [[c.id for c in row] for row in got.chunks]


def test_short_documents_are_indexed_whole(chunker: Chunker) -> None:
    docs = [{**document(i, 1), "text": f"{WORDS[i]} {WORDS[i + 1]}"} for i in range(8)]
    index = build(docs, chunker)
    assert len(index.engine) == len(docs)
    plain = HybridIndex.build(docs, retrievers=("bm25", "dense"), encoder=HashingEncoder())
    expected = plain.search(QUERIES, 8)
    got = index.search(QUERIES, 8)
    assert got.ids == expected.doc_ids
    for row, scores in zip(got.documents, expected.scores, strict=True):
        np.testing.assert_allclose([h.score for h in row], scores[: len(row)], rtol=1e-6)


def live_chunk_ids(engine: HybridIndex) -> set[str]:
    return {hit.id for hit in engine.get(list(engine.doc_ids), missing_ok=True)}


def assert_equals_fresh(
    index: ParentDocumentIndex, final: list[dict[str, Any]], chunker: Chunker
) -> None:
    fresh = build(final, chunker)
    assert live_chunk_ids(index.engine) == live_chunk_ids(fresh.engine)  # no orphan chunk
    assert len(index) == len(final)
    for unit in ("documents", "chunks"):
        got = index.search(QUERIES, 20, unit=unit, chunk_depth=200)
        expected = fresh.search(QUERIES, 20, unit=unit, chunk_depth=200)
        assert got.ids == expected.ids
        rows = got.documents if unit == "documents" else got.chunks
        ref = expected.documents if unit == "documents" else expected.chunks
        for a, b in zip(rows, ref, strict=True):  # type: ignore[arg-type]
            np.testing.assert_allclose([h.score for h in a], [h.score for h in b], rtol=1e-5)
            assert [h.text for h in a] == [h.text for h in b]


def test_upsert_delete_add_equal_a_fresh_build(chunker: Chunker) -> None:
    docs = corpus()
    index = build(docs, chunker)
    shorter = document(4, 1, seed=1)  # 5 sentences -> 1
    longer = document(5, 5, seed=2)  # 1 sentence -> 5
    assert index.upsert([shorter, longer]) == ["p4", "p5"]
    assert index.delete(["p2", "p7"]) == 2
    assert index.add([document(20, 3, seed=3)]) == ["p20"]
    assert index.has_staged
    index.commit()
    kept = [d for d in docs if d["_id"] not in {"p2", "p4", "p5", "p7"}]
    final = [*kept, shorter, longer, document(20, 3, seed=3)]
    assert_equals_fresh(index, final, chunker)
    # Staged changes stack: an upsert of a staged parent, a delete of a staged one.
    index.upsert([document(20, 1, seed=4)])
    index.add([document(21, 4)])
    index.delete(["p21"])
    index.commit()
    assert_equals_fresh(index, [*final[:-1], document(20, 1, seed=4)], chunker)


def test_save_load_roundtrip(chunker: Chunker, tmp_path: Path) -> None:
    docs = corpus()
    index = build(docs, chunker)
    index.save(tmp_path / "idx")
    index.close()
    with ParentDocumentIndex.load(
        tmp_path / "idx", chunker=chunker, encoder=HashingEncoder()
    ) as loaded:
        assert len(loaded) == len(index)
        for options in ({}, {"unit": "chunks"}, {"aggregate": "sum", "context_tokens": 30}):
            got, expected = (
                loaded.search(QUERIES, 5, **options),
                index.search(QUERIES, 5, **options),
            )
            assert got.documents == expected.documents and got.chunks == expected.chunks
            assert got.context == expected.context
        loaded.upsert([document(4, 1, seed=1)])  # the bookkeeping was read back
        loaded.delete(["p3"])
        loaded.commit()
    final = [d for d in docs if d["_id"] not in {"p3", "p4"}] + [document(4, 1, seed=1)]
    with ParentDocumentIndex.load(
        tmp_path / "idx", chunker=chunker, encoder=HashingEncoder()
    ) as again:
        assert_equals_fresh(again, final, chunker)


def test_load_refuses_an_index_of_whole_documents(chunker: Chunker, tmp_path: Path) -> None:
    plain = HybridIndex.build(corpus(), retrievers=("bm25",))
    plain.save(tmp_path / "plain")
    plain.close()
    with pytest.raises(IndexFormatError, match="not a ParentDocumentIndex"):
        ParentDocumentIndex.load(tmp_path / "plain", chunker=chunker)


def matches(doc: dict[str, Any]) -> bool:
    meta = doc["metadata"]
    return meta["group"] != 1 and meta["lang"] == "en"


def test_filters_equal_brute_force_filtering(chunker: Chunker) -> None:
    docs = corpus()
    index = build(docs, chunker, retrievers=("bm25",))
    n = len(index.engine)
    allowed = {d["_id"] for d in docs if matches(d)}
    where = {"group": {"$ne": 1}, "lang": "en"}
    got = index.search(QUERIES, 12, filter=where, chunk_depth=n)
    everything = index.search(QUERIES, 12, chunk_depth=n)
    for row, full in zip(got.documents, everything.documents, strict=True):
        assert [h.id for h in row] == [h.id for h in full if h.id in allowed]
        assert all(matches({"metadata": h.metadata}) for h in row)
    chunks = index.search(QUERIES, n, unit="chunks", filter=where)
    assert all(c.parent_id in allowed for row in chunks.chunks for c in row)


@pytest.mark.parametrize("budget", [1, 12, 25, 60, 10_000])
def test_context_fits_the_budget_without_duplicates(
    chunker: Chunker, counter: Tokenizer, budget: int
) -> None:
    docs = corpus()
    texts = {d["_id"]: d["text"] for d in docs}
    index = build(docs, chunker)
    n = len(index.engine)
    got = index.search(QUERIES, 3, context_tokens=budget, unit="chunks", chunk_depth=n)
    ranking = chunk_ranking(index)
    for spans, chunks in zip(got.context, ranking, strict=True):
        assert sum(s.num_tokens for s in spans) <= budget
        assert [s.score for s in spans] == sorted((s.score for s in spans), reverse=True)
        for s in spans:
            assert texts[s.parent_id][s.start : s.end] == s.text
            assert len(counter.encode(s.text, add_special_tokens=False).ids) == s.num_tokens
        for a in spans:  # no character of a parent given twice
            for b in spans:
                if a is not b and a.parent_id == b.parent_id:
                    assert a.end < b.start or b.end < a.start
        best = chunks[0]
        best_tokens = len(
            counter.encode(texts[best[0]][best[2] : best[3]], add_special_tokens=False).ids
        )
        if best_tokens <= budget:  # the best chunk is always in
            assert any(
                s.parent_id == best[0] and s.start <= best[2] and best[3] <= s.end for s in spans
            )
        if budget == 10_000:  # everything retrieved fits: every chunk's characters are given
            for parent, _, start, end, _ in chunks:
                assert any(
                    s.parent_id == parent and s.start <= start and end <= s.end for s in spans
                )
    assert index.search(QUERIES, 3).context is None


def test_errors(chunker: Chunker) -> None:
    docs = corpus()
    index = build(docs, chunker)
    with pytest.raises(ValueError, match=r"unit must be one of \['documents', 'chunks'\]"):
        index.search("cat", unit="parents")
    with pytest.raises(ValueError, match=r"aggregate must be one of \['max', 'sum', 'first'\]"):
        index.search("cat", aggregate="mean")
    with pytest.raises(ValueError, match="context_tokens must be an int >= 1"):
        index.search("cat", context_tokens=0)
    with pytest.raises(ValueError, match="chunk_depth must be an int >= 1"):
        index.search("cat", chunk_depth=0)
    with pytest.raises(ValueError, match="k must be an int >= 1"):
        index.search("cat", 0)
    bad = {**docs[0], "_id": "x", "metadata": {"_chunk.parent": "y"}}
    with pytest.raises(ValueError, match=r"'_chunk\.parent'.*reserved"):
        build([bad], chunker)
    with pytest.raises(ValueError, match="reserved"):
        index.add([{**bad, "_chunk.start": 3, "metadata": {}}])
    with pytest.raises(DuplicateIdError, match=r"'p1' is already in the index.*upsert"):
        index.add([document(1, 2)])
    with pytest.raises(DuplicateIdError, match="given twice"):
        index.add([document(30, 2), document(30, 1)])
    with pytest.raises(ValueError, match="has no '_id'"):
        index.add(["a text without id"])
    with pytest.raises(UnknownIdError, match="'nope' is not in the index"):
        index.delete(["p1", "nope"])
    with pytest.raises(TypeError, match="use \\['p1'\\]"):
        index.delete("p1")
    assert not index.has_staged  # nothing staged by the failures
    assert index.delete(["nope"], missing_ok=True) == 0
    with pytest.raises(IndexFormatError):
        ParentDocumentIndex.load(Path("/nonexistent/idx"), chunker=chunker)


def test_documents_without_ids_take_their_positions(chunker: Chunker) -> None:
    index = build(["cat on the mat.  The dog sat.", "river stone"], chunker)
    assert index.search("river", 1).ids == [["1"]]


def test_chunker_counts_tokens_as_chunks_do(chunker: Chunker, counter: Tokenizer) -> None:
    for chunk in chunker.chunk_documents(corpus()):
        assert chunker.count_tokens(chunk.text) == chunk.num_tokens
        assert chunk.num_tokens == len(counter.encode(chunk.text, add_special_tokens=False).ids)
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        chunker.count_tokens(b"cat")  # type: ignore[arg-type]


def test_a_passage_past_the_window_is_found_with_the_real_model(encoder: Any) -> None:
    """The one test with the default model: a fact in the last sentence of a document of
    about 400 tokens, past the 256 the bi-encoder reads whole, is found through its chunk
    (dense leg alone), and the hit's span holds it."""
    dishes = "soup bread pasta rice curry salad stew pie cake omelette".split()
    filler = "  ".join(
        f"To cook the {dish} well, stir the pot slowly and add {n} pinches of salt and pepper."
        for n, dish in enumerate(dishes * 2, 1)
    )
    fact = "The lighthouse on the northern cliff was painted bright green in 1953."
    docs = [
        {"_id": "long", "title": "Kitchen notes", "text": f"{filler}  {fact}"},
        {
            "_id": "ships",
            "title": "Harbour",
            "text": "Fishing boats return to the harbour at dawn.",
        },
        {"_id": "paint", "title": "Paint", "text": "Oil paint dries slowly on canvas."},
        {"_id": "birds", "title": "Cliffs", "text": "Gulls nest on the cliffs above the sea."},
    ]
    chunker = Chunker.load()
    assert chunker.count_tokens(f"Kitchen notes {filler}") > 254  # the fact is past the window
    index = ParentDocumentIndex.build(docs, chunker=chunker, retrievers=("dense",), encoder=encoder)
    assert len(index.engine) > len(docs)
    query = "what colour was the lighthouse on the cliff painted"
    best = index.search(query, 1).documents[0][0]
    assert best.id == "long"
    assert any(best.text[a:b].endswith(fact) for a, b in best.spans)
    plain = HybridIndex.build(docs, retrievers=("dense",), encoder=encoder)
    assert plain.search(query, 4).doc_ids[0][0] != "long"  # truncated, the fact is unread


def test_close_drops_the_staged_parents_too(chunker: Chunker) -> None:
    docs = corpus()
    index = build(docs, chunker)
    index.add([document(40, 3)])
    index.delete(["p1"])
    index.close()  # staged changes are dropped, in the engine and in the parent bookkeeping
    assert not index.has_staged
    index.add([document(40, 3)])  # not a duplicate any more
    with pytest.raises(DuplicateIdError):
        index.add([document(1, 2)])  # p1 is back
    index.commit()
    assert_equals_fresh(index, [*docs, document(40, 3)], chunker)


def assert_gets(index: ParentDocumentIndex, docs: list[dict[str, Any]]) -> None:
    """``get`` returns each parent exactly as it was put in, in the order asked, as a ``Hit``
    of score NaN."""
    ids = [d["_id"] for d in reversed(docs)]
    hits = index.get([*ids, ids[0]])  # an id given twice comes back twice
    assert [h.id for h in hits] == [*ids, ids[0]]
    expected = {d["_id"]: d for d in docs}
    for hit in hits:
        doc = expected[hit.id]
        assert isinstance(hit, Hit) and np.isnan(hit.score)
        assert (hit.title, hit.text, hit.metadata) == (doc["title"], doc["text"], doc["metadata"])


def test_get_returns_the_parents_as_put_in(chunker: Chunker, tmp_path: Path) -> None:
    docs = corpus()  # texts of 1 to 5 sentences, some with whitespace around them
    index = build(docs, chunker)
    assert len(index.engine) > len(index)  # some parents span several chunks
    assert_gets(index, docs)
    blank = {"_id": "blank", "title": "Only a title", "text": "  ", "metadata": {"group": 9}}
    index.upsert([document(4, 1, seed=1)])  # 5 sentences -> 1
    index.add([blank])
    index.delete(["p2"])
    assert_gets(index, docs)  # staged changes are not seen
    index.commit()
    final = [d for d in docs if d["_id"] not in {"p2", "p4"}] + [document(4, 1, seed=1), blank]
    assert_gets(index, final)
    with pytest.raises(UnknownIdError, match="'p2' is not in the index"):
        index.get(["p1", "p2", "nope"])
    assert [h.id for h in index.get(["p2", "p1", "nope", "x" * 512], missing_ok=True)] == ["p1"]
    with pytest.raises(UnknownIdError, match="'xxx"):
        index.get(["x" * 512])  # no chunk of it can exist: unknown, not a bad chunk id
    with pytest.raises(TypeError, match=r"use \['p1'\]"):
        index.get("p1")
    index.save(tmp_path / "idx")
    index.close()
    with ParentDocumentIndex.load(
        tmp_path / "idx", chunker=chunker, encoder=HashingEncoder()
    ) as loaded:
        assert_gets(loaded, final)


def test_get_of_short_documents_equals_a_plain_engines(chunker: Chunker) -> None:
    docs = [{**document(i, 1), "text": f"{WORDS[i]} {WORDS[i + 1]}"} for i in range(6)]
    index = build(docs, chunker, retrievers=("bm25",))
    plain = HybridIndex.build(docs, retrievers=("bm25",))
    ids = [d["_id"] for d in docs]
    fields = [[(h.id, h.title, h.text, h.metadata) for h in e.get(ids)] for e in (index, plain)]
    assert fields[0] == fields[1]


def test_holds_follows_the_staged_changes(chunker: Chunker) -> None:
    index = build(corpus(), chunker)
    ids = ["p1", "p2", "p40", "nope"]
    assert index.holds(ids) == [True, True, False, False]
    index.add([document(40, 3)])
    index.delete(["p2"])
    assert index.holds(ids) == [True, False, True, False]  # as the next commit will have it
    index.upsert([document(1, 4, seed=5)])
    assert index.holds(ids) == [True, False, True, False]
    index.commit()
    assert index.holds(ids) == [True, False, True, False]
    assert index.holds([]) == []
    with pytest.raises(TypeError, match=r"use \['p1'\]"):
        index.holds("p1")
    with pytest.raises(ValueError, match="empty"):
        index.holds([""])


def search_state(index: ParentDocumentIndex, ids: list[str]) -> list[Any]:
    """The (id, score, text) rows of a search per unit, and the parents of ``ids`` (all
    committed) as ``get`` returns them."""
    state: list[Any] = []
    for unit in ("documents", "chunks"):
        got = index.search(QUERIES, 20, unit=unit, chunk_depth=200)
        rows = got.documents if unit == "documents" else got.chunks
        assert rows is not None
        state.append([[(h.id, h.score, h.text) for h in row] for row in rows])
    state.append([(h.id, h.title, h.text, h.metadata) for h in index.get(ids)])
    return state


def test_staged_counts_parents_and_rollback_drops_them(chunker: Chunker) -> None:
    docs = corpus()
    index = build(docs, chunker)
    ids = [d["_id"] for d in docs]
    before = search_state(index, ids)
    assert index.staged == StagedChanges(0, 0)
    index.upsert([document(4, 1, seed=1)])  # a committed parent of 5 chunks or so, replaced
    assert index.staged == StagedChanges(added=1, deleted=1)
    index.delete(["p2"])
    assert index.staged == StagedChanges(added=1, deleted=2)
    index.add([document(40, 5)])  # several chunks, one parent
    assert index.staged == StagedChanges(added=2, deleted=2)
    index.add([document(41, 2)])
    index.delete(["p41"])  # a staged parent deleted again is simply dropped
    assert index.staged == StagedChanges(added=2, deleted=2)
    assert index.engine.staged.added > 2  # the engine counts chunks, not parents
    assert index.rollback() == StagedChanges(added=2, deleted=2)
    assert index.staged == StagedChanges(0, 0) and not index.has_staged
    assert index.holds(["p2", "p4", "p40", "p41"]) == [True, True, False, False]
    assert search_state(index, ids) == before
    assert index.rollback() == StagedChanges(0, 0)
    index.add([document(40, 5)])  # free to add again; p2 to delete again
    index.delete(["p2"])
    index.commit()
    final = [d for d in docs if d["_id"] != "p2"] + [document(40, 5)]
    assert_equals_fresh(index, final, chunker)


def test_merge_keeps_the_results_in_one_segment(chunker: Chunker) -> None:
    docs = corpus()
    index = build(docs, chunker)
    for change in (
        lambda: index.add([document(40, 4), document(41, 2)]),
        lambda: index.upsert([document(3, 2, seed=6)]),
        lambda: index.delete(["p5", "p40"]),
    ):
        change()
        index.commit()
    assert index.engine.num_segments > 1
    ids = [f"p{i}" for i in [*range(12), 41] if i != 5]
    before = search_state(index, ids)
    parents = len(index)
    index.merge()
    assert index.engine.num_segments == 1 and len(index) == parents
    after = search_state(index, ids)
    assert [[[(i, t) for i, _, t in row] for row in unit] for unit in after[:2]] == [
        [[(i, t) for i, _, t in row] for row in unit] for unit in before[:2]
    ]
    for unit_after, unit_before in zip(after[:2], before[:2], strict=True):
        for row_after, row_before in zip(unit_after, unit_before, strict=True):
            np.testing.assert_allclose(
                [s for _, s, _ in row_after], [s for _, s, _ in row_before], rtol=1e-6
            )
    assert after[2] == before[2]
    index.add([document(50, 3)])
    index.merge()  # commits what is staged first
    assert index.staged == StagedChanges(0, 0) and index.holds(["p50"]) == [True]
    assert index.engine.num_segments == 1
    final = [d for d in docs if d["_id"] not in {"p3", "p5"}]
    final += [document(41, 2), document(3, 2, seed=6), document(50, 3)]
    assert_equals_fresh(index, final, chunker)
    assert_gets(index, final)


def test_a_merge_that_fails_after_its_commit_keeps_the_parents_committed(
    chunker: Chunker, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = build(corpus(), chunker)
    index.add([document(40, 3)])

    def fail(*args: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(index.engine._state, "_merge", fail)
    with pytest.raises(OSError, match="disk full"):
        index.merge()
    assert index.staged == StagedChanges(0, 0) and len(index) == 13
    assert_gets(index, [document(40, 3)])
    with pytest.raises(DuplicateIdError, match="'p40' is already in the index"):
        index.add([document(40, 3)])
