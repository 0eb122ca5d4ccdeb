"""The chunker against independent checks: offsets that slice the parent exactly, chunks in
order that lose no text, token counts recounted here with the bi-encoder's tokenizer, overlaps
of whole sentences, over-long sentences cut with exact offsets, unicode, a greedy reference
packer written here, and hypothesis texts built from sentences."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
import sentencex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from hybrid_engine.chunking import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_OVERLAP_TOKENS,
    Chunk,
    Chunker,
    sentence_spans,
)


@pytest.fixture(scope="module")
def tokenizer(model_path: Path) -> Tokenizer:
    """The bi-encoder's tokenizer.json as shipped (it truncates at the model's window)."""
    return Tokenizer.from_file(str(model_path / "tokenizer.json"))


@pytest.fixture(scope="module")
def counter(model_path: Path) -> Tokenizer:
    """The test's own counting tokenizer: the same file, never truncating."""
    tok = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


_chunkers: dict[tuple[int, int], Chunker] = {}


def make_chunker(tokenizer: Tokenizer, max_tokens: int, overlap_tokens: int) -> Chunker:
    """One chunker per budget (copying the tokenizer is not free; hypothesis asks often)."""
    key = (max_tokens, overlap_tokens)
    if key not in _chunkers:
        _chunkers[key] = Chunker(tokenizer, max_tokens=max_tokens, overlap_tokens=overlap_tokens)
    return _chunkers[key]


def recount(counter: Tokenizer, text: str) -> int:
    return len(counter.encode(text, add_special_tokens=False).ids)


def oracle_sentences(text: str) -> list[tuple[int, int]]:
    """sentencex's boundaries, stripped here, blank ones dropped."""
    spans = []
    for b in sentencex.get_sentence_boundaries("en", text):
        piece = b["text"]
        start = b["start_index"] + len(piece) - len(piece.lstrip())
        end = b["start_index"] + len(piece.rstrip())
        if start < end:
            spans.append((start, end))
    return spans


def check_chunks(
    text: str,
    chunks: Sequence[Chunk],
    counter: Tokenizer,
    max_tokens: int,
    overlap_tokens: int,
    parent_id: str = "p",
) -> None:
    """Every property a chunking of ``text`` must have, checked from the text itself."""
    sentences = oracle_sentences(text)
    starts = {a for a, _ in sentences}
    ends = {b for _, b in sentences}
    over = [(a, b) for a, b in sentences if recount(counter, text[a:b]) > max_tokens]

    def inside_long(offset: int) -> bool:
        return any(a < offset < b for a, b in over)

    covered = bytearray(len(text))
    for position, chunk in enumerate(chunks):
        assert chunk.parent_id == parent_id and chunk.position == position
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.text and chunk.text == chunk.text.strip()
        assert chunk.num_tokens == recount(counter, chunk.text)
        assert chunk.num_tokens <= max_tokens
        # whole sentences, except where a sentence over the budget was cut
        assert chunk.start in starts or inside_long(chunk.start)
        assert chunk.end in ends or inside_long(chunk.end)
        covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
    lost = [i for i, c in enumerate(text) if not c.isspace() and not covered[i]]
    assert not lost, f"characters in no chunk: {[text[i] for i in lost[:10]]}"
    for prev, nxt in itertools.pairwise(chunks):
        assert prev.start < nxt.start and prev.end < nxt.end
        if nxt.start < prev.end:  # an overlap: whole sentences ending prev, within its budget
            assert nxt.start in starts and prev.end in ends
            assert nxt.start > prev.start
            assert recount(counter, text[nxt.start : prev.end]) <= overlap_tokens
    for chunk in chunks[:-1]:
        # greedy: the sentence after a chunk ending on a sentence end did not fit
        following = next(((a, b) for a, b in sentences if a >= chunk.end), None)
        if chunk.end in ends and following is not None and following not in over:
            assert recount(counter, text[chunk.start : following[1]]) > max_tokens


def reference_chunks(
    text: str, counter: Tokenizer, max_tokens: int, overlap_tokens: int
) -> list[tuple[int, int]] | None:
    """Greedy packing of whole sentences, written from the spec; None when a sentence is over
    the budget (cut at tokens, which this reference does not do)."""
    whole = text.strip()
    if not whole:
        return []
    if recount(counter, whole) <= max_tokens:
        start = text.index(whole[0])
        return [(start, start + len(whole))]
    sentences = oracle_sentences(text)
    counts = [recount(counter, text[a:b]) for a, b in sentences]
    if max(counts) > max_tokens:
        return None
    out = []
    first = fresh = 0
    while fresh < len(sentences):
        while sum(counts[first : fresh + 1]) > max_tokens:
            first += 1
        stop = fresh + 1
        while stop < len(sentences) and sum(counts[first : stop + 1]) <= max_tokens:
            stop += 1
        out.append((sentences[first][0], sentences[stop - 1][1]))
        overlap = stop
        while overlap - 1 > first and sum(counts[overlap - 1 : stop]) <= overlap_tokens:
            overlap -= 1
        first, fresh = overlap, stop
    return out


# --- examples ------------------------------------------------------------------------------

ABSTRACT = (
    "Smith et al. reported a mean of 3.5 mg (see Fig. 2) in 2019. The effect, e.g. on blood "
    "pressure, was small. Dr. Jones disagreed! Was the dose too low? Further trials vs. placebo "
    "are planned. Patients were followed for 12.5 months. Adverse events were rare. The "
    "authors conclude that the drug is safe."
)


def test_defaults_fit_the_model_window(model_path: Path, tokenizer: Tokenizer) -> None:
    chunker = Chunker.load(model_path)
    assert (chunker.max_tokens, chunker.overlap_tokens) == (200, 40)
    assert (DEFAULT_MAX_TOKENS, DEFAULT_OVERLAP_TOKENS) == (200, 40)
    window = json.loads((model_path / "manifest.json").read_text())["max_length"]
    assert DEFAULT_MAX_TOKENS + 2 <= window  # [CLS] and [SEP]
    Chunker(tokenizer, max_tokens=10, overlap_tokens=0)
    assert tokenizer.truncation is not None  # the caller's tokenizer is left as it was
    assert tokenizer.truncation["max_length"] == window
    assert repr(chunker) == "Chunker(max_tokens=200, overlap_tokens=40)"


@pytest.mark.parametrize("text", ["", " ", "\n\t  \u3000\n"])
def test_blank_text_gives_no_chunk(tokenizer: Tokenizer, text: str) -> None:
    assert make_chunker(tokenizer, 200, 40).chunk(text, "p") == []


def test_text_that_fits_is_one_stripped_chunk(tokenizer: Tokenizer, counter: Tokenizer) -> None:
    text = "\n  " + ABSTRACT + "  \n"
    (chunk,) = make_chunker(tokenizer, 200, 40).chunk(text, "doc-1")
    assert (chunk.start, chunk.end) == (3, 3 + len(ABSTRACT))
    assert chunk == Chunk("doc-1", 0, 3, 3 + len(ABSTRACT), ABSTRACT, recount(counter, ABSTRACT))


def test_abbreviations_do_not_end_sentences() -> None:
    found = [ABSTRACT[a:b] for a, b in sentence_spans(ABSTRACT)]
    assert found[0] == "Smith et al. reported a mean of 3.5 mg (see Fig. 2) in 2019."
    assert found[1] == "The effect, e.g. on blood pressure, was small."
    assert found[2:5] == [
        "Dr. Jones disagreed!",
        "Was the dose too low?",
        "Further trials vs. placebo are planned.",
    ]
    assert "Patients were followed for 12.5 months." in found
    assert len(found) == 8


@pytest.mark.parametrize(("max_tokens", "overlap_tokens"), [(30, 0), (30, 12), (45, 20), (30, 29)])
def test_small_budgets_pack_whole_sentences(
    tokenizer: Tokenizer, counter: Tokenizer, max_tokens: int, overlap_tokens: int
) -> None:
    chunks = make_chunker(tokenizer, max_tokens, overlap_tokens).chunk(ABSTRACT, "p")
    assert len(chunks) > 1
    check_chunks(ABSTRACT, chunks, counter, max_tokens, overlap_tokens)
    expected = reference_chunks(ABSTRACT, counter, max_tokens, overlap_tokens)
    assert expected is not None  # every sentence of ABSTRACT fits 30 tokens
    assert [(c.start, c.end) for c in chunks] == expected


def test_overlap_repeats_trailing_sentences(tokenizer: Tokenizer, counter: Tokenizer) -> None:
    # twelve sentences of the same length, so the expected chunks can be counted by hand
    sentences = [f"Sentence number {i} is here." for i in range(12)]
    per = recount(counter, sentences[0])
    assert all(recount(counter, s) == per for s in sentences)
    text = " ".join(sentences)
    chunks = make_chunker(tokenizer, 4 * per, 2 * per).chunk(text, "p")
    texts = [[s for s in sentences if s in c.text] for c in chunks]
    # 4 sentences per chunk, the last 2 repeated: 0-3, 2-5, 4-7, 6-9, 8-11
    assert texts == [sentences[i : i + 4] for i in range(0, 9, 2)]
    check_chunks(text, chunks, counter, 4 * per, 2 * per)
    # an overlap budget below one sentence repeats nothing
    chunks = make_chunker(tokenizer, 4 * per, per - 1).chunk(text, "p")
    assert [c.text for c in chunks] == [" ".join(sentences[i : i + 4]) for i in (0, 4, 8)]


def test_a_sentence_filling_a_chunk_gives_no_overlap(
    tokenizer: Tokenizer, counter: Tokenizer
) -> None:
    long = "This sentence alone uses nearly all of the budget of one chunk here."
    text = f"{long} {long} Short one. {long}"
    n = recount(counter, long)
    chunks = make_chunker(tokenizer, n + 1, n - 1).chunk(text, "p")
    assert [c.text for c in chunks] == [long, long, "Short one.", long]
    check_chunks(text, chunks, counter, n + 1, n - 1)


def test_giant_sentence_is_cut_between_words(tokenizer: Tokenizer, counter: Tokenizer) -> None:
    words = [f"w{i} item" if i % 7 else "pneumonoultramicroscopic" for i in range(600)]
    text = "Intro sentence. " + " ".join(words) + ". Outro sentence."
    chunks = make_chunker(tokenizer, 50, 10).chunk(text, "p")
    check_chunks(text, chunks, counter, 50, 10)
    assert len(chunks) > 20
    for chunk in chunks:  # cuts between words: a chunk neither starts nor ends mid-word
        assert chunk.start == 0 or text[chunk.start - 1] == " "
        assert chunk.end == len(text) or text[chunk.end] in " ."


def test_one_word_over_the_budget_is_cut_at_tokens(
    tokenizer: Tokenizer, counter: Tokenizer
) -> None:
    word = "pneumonoultramicroscopicsilicovolcanoconiosis"
    assert recount(counter, word) > 8
    text = f"Look: {word} {word}!"
    chunks = make_chunker(tokenizer, 4, 0).chunk(text, "p")
    check_chunks(text, chunks, counter, 4, 0)
    first = text.index(word)
    pieces = [c.text for c in chunks if first <= c.start and c.end <= first + len(word)]
    assert len(pieces) > 1 and "".join(pieces) == word


def test_unicode_keeps_exact_offsets(tokenizer: Tokenizer, counter: Tokenizer) -> None:
    text = (
        "Café crème brûlée était délicieux. 東京は大きい。大阪も大きい。 "
        "The family 👩‍👩‍👧 smiled 😀 at the naïve résumé. "
        "Combining e\u0301 marks and \u200eleft-to-right marks stay. 한국어 문장입니다. "
        "Ünïcödé wörds everywhere, e.g. Ångström! Done?"
    )
    for max_tokens, overlap_tokens in [(8, 3), (12, 0), (20, 10), (200, 40)]:
        chunks = make_chunker(tokenizer, max_tokens, overlap_tokens).chunk(text, "p")
        check_chunks(text, chunks, counter, max_tokens, overlap_tokens)
    (tiny,) = make_chunker(tokenizer, 4, 0).chunk("😀", "p")
    assert (tiny.start, tiny.end, tiny.text) == (0, 1, "😀")


def test_a_character_over_the_budget_is_its_own_chunk(
    tokenizer: Tokenizer, counter: Tokenizer
) -> None:
    # NFD turns a Hangul syllable into three jamo tokens: a budget of 1 cannot hold one
    chunks = make_chunker(tokenizer, 1, 0).chunk("한국", "p")
    assert [(c.text, c.start, c.end) for c in chunks] == [("한", 0, 1), ("국", 1, 2)]
    assert [c.num_tokens for c in chunks] == [recount(counter, "한"), recount(counter, "국")]
    assert all(c.num_tokens > 1 for c in chunks)


def test_scifact_abstracts(shared_data: Path, tokenizer: Tokenizer, counter: Tokenizer) -> None:
    path = shared_data / "beir" / "scifact" / "corpus.jsonl"
    with path.open(encoding="utf-8") as lines:
        docs = [json.loads(line) for i, line in enumerate(lines) if i % 25 == 0]
    chunker = make_chunker(tokenizer, 64, 20)
    chunks = chunker.chunk_documents(docs)
    by_parent: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_parent.setdefault(chunk.parent_id, []).append(chunk)
    assert list(by_parent) == [d["_id"] for d in docs if d["text"].strip()]
    compared = 0
    for doc in docs:
        check_chunks(doc["text"], by_parent.get(doc["_id"], []), counter, 64, 20, doc["_id"])
        expected = reference_chunks(doc["text"], counter, 64, 20)
        if expected is not None:
            compared += 1
            assert [(c.start, c.end) for c in by_parent.get(doc["_id"], [])] == expected
    assert compared > len(docs) // 2, compared


def test_documents_ids_and_titles(tokenizer: Tokenizer) -> None:
    chunker = make_chunker(tokenizer, 30, 10)
    docs = [
        {"_id": "a", "title": "A title that is not chunked", "text": ABSTRACT},
        {"_id": "b", "text": "   "},
        {"_id": "c", "title": "", "text": "One sentence."},
    ]
    chunks = chunker.chunk_documents(docs)
    assert {c.parent_id for c in chunks} == {"a", "c"}
    assert all("title" not in c.text for c in chunks)
    assert [c.text for c in chunks if c.parent_id == "a"] == [
        c.text for c in chunker.chunk(ABSTRACT, "a")
    ]
    assert chunks[-1] == Chunk("c", 0, 0, 13, "One sentence.", chunks[-1].num_tokens)
    plain = chunker.chunk_documents(iter(["First text.", "Second text."]))
    assert [(c.parent_id, c.text) for c in plain] == [("0", "First text."), ("1", "Second text.")]


# --- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("max_tokens", "overlap_tokens", "match"),
    [
        (0, 0, "max_tokens must be an int >= 1"),
        (-5, 0, "max_tokens must be an int >= 1"),
        (2.5, 0, "max_tokens must be an int >= 1"),
        (True, 0, "max_tokens must be an int >= 1"),
        (10, -1, "overlap_tokens must be an int >= 0"),
        (10, 10, r"overlap_tokens \(10\) must be below max_tokens \(10\)"),
        (10, 20, "must be below max_tokens"),
        (255, 0, r"exceeds the tokenizer's window of 256 tokens.*max_tokens <= 254"),
    ],
)
def test_bad_budgets(
    tokenizer: Tokenizer, max_tokens: object, overlap_tokens: object, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        Chunker(tokenizer, max_tokens=max_tokens, overlap_tokens=overlap_tokens)  # type: ignore[arg-type]


def test_a_window_only_bounds_a_truncating_tokenizer(counter: Tokenizer) -> None:
    assert Chunker(counter, max_tokens=10_000, overlap_tokens=0).max_tokens == 10_000


def test_bad_inputs(tokenizer: Tokenizer) -> None:
    chunker = make_chunker(tokenizer, 200, 40)
    with pytest.raises(TypeError, match="text must be a str, got bytes"):
        chunker.chunk(b"bytes", "p")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="text must be a str, got NoneType"):
        chunker.chunk_documents([{"text": None}])
    with pytest.raises(TypeError, match="parent_id must be a str, got int"):
        chunker.chunk("text", 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"tokenizer must be a tokenizers\.Tokenizer"):
        Chunker("all-MiniLM-L6-v2")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got a single str; wrap it in a list"):
        chunker.chunk_documents("one document")
    with pytest.raises(TypeError, match="field 'text' is int"):
        chunker.chunk_documents([{"_id": "a", "text": 5}])
    with pytest.raises(ValueError, match="has no 'text' field"):
        chunker.chunk_documents([{"_id": "a"}])
    with pytest.raises(ValueError, match="duplicate document '_id' 'a'"):
        chunker.chunk_documents([{"_id": "a", "text": "x"}, {"_id": "a", "text": "y"}])
    with pytest.raises(ValueError, match="has no '_id' while others do"):
        chunker.chunk_documents([{"_id": "a", "text": "x"}, {"text": "y"}])


def test_load_names_the_prepare_command(tmp_path: Path) -> None:
    from hybrid_engine.models import ModelNotFoundError

    with pytest.raises(ModelNotFoundError, match="hybrid-engine models prepare"):
        Chunker.load(tmp_path / "absent")


# --- properties ----------------------------------------------------------------------------

WORDS = [
    "the", "cells", "were", "treated", "with", "3.5", "mg", "et", "al.", "e.g.", "Fig.", "2",
    "(n", "=", "12)", "protein", "expression", "increased", "café", "naïve", "東京", "大阪",
    "😀", "👩‍👧", "한국어", "résumé", "p53-positive", "vs.", "pneumonoultramicroscopic",
    "in", "vivo", "\u200emark", "e\u0301",
]  # fmt: skip
sentence_st = st.builds(
    lambda words, end: " ".join(words).capitalize() + end,
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=40),
    st.sampled_from([".", "!", "?", "。", ""]),
)
text_st = st.builds(
    lambda lead, sentences, seps, trail: (
        lead + "".join(s + sep for s, sep in zip(sentences, seps)) + trail
    ),
    st.sampled_from(["", " ", "\n"]),
    st.lists(sentence_st, min_size=0, max_size=12),
    st.lists(st.sampled_from([" ", "  ", "\n", "\n\n", "\t"]), min_size=12, max_size=12),
    st.sampled_from(["", " ", "\n "]),
)
budget_st = st.integers(3, 80).flatmap(lambda m: st.tuples(st.just(m), st.integers(0, m - 1)))


@settings(
    max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
@given(text=text_st, budget=budget_st)
def test_property_random_texts(
    tokenizer: Tokenizer, counter: Tokenizer, text: str, budget: tuple[int, int]
) -> None:
    max_tokens, overlap_tokens = budget
    chunks = make_chunker(tokenizer, max_tokens, overlap_tokens).chunk(text, "p")
    assert (not chunks) == (not text.strip())
    check_chunks(text, chunks, counter, max_tokens, overlap_tokens)
    expected = reference_chunks(text, counter, max_tokens, overlap_tokens)
    if expected is not None:
        assert [(c.start, c.end) for c in chunks] == expected


def test_threads_give_the_sequential_chunks(tokenizer: Tokenizer) -> None:
    from concurrent.futures import ThreadPoolExecutor

    chunker = make_chunker(tokenizer, 30, 12)
    texts = [" ".join([ABSTRACT] * (1 + i % 4)) for i in range(24)]
    sequential = [chunker.chunk(t, str(i)) for i, t in enumerate(texts)]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(chunker.chunk, texts, [str(i) for i in range(len(texts))]))
    assert threaded == sequential
