"""Differential tests: ``_core.stem_english`` against PyStemmer's Snowball English stemmer."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_engine import _core

Stemmer = pytest.importorskip("Stemmer", reason="PyStemmer is the reference implementation")

WORD_RE = re.compile(r"(?u)\b\w\w+\b")


def require(paths: list[Path], what: str, folder: Path) -> list[Path]:
    if not paths:
        pytest.skip(f"{what} not found under {folder} (set HYBRID_ENGINE_DATA)")
    return paths


def corpus_texts(path: Path) -> Iterator[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            yield doc.get("title", "") + " " + doc.get("text", "")


def distinct_words(paths: Iterable[Path]) -> set[str]:
    words: set[str] = set()
    for path in paths:
        for text in corpus_texts(path):
            words.update(WORD_RE.findall(text.lower()))
    return words


def assert_same_stems(words: Iterable[str]) -> int:
    words = sorted(words)
    reference = Stemmer.Stemmer("english").stemWords(words)
    mismatches = [
        (w, ours, ref)
        for w, ref in zip(words, reference, strict=True)
        if (ours := _core.stem_english(w)) != ref
    ]
    assert not mismatches, f"{len(mismatches)} of {len(words)} differ, e.g. {mismatches[:20]}"
    return len(words)


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("ties", "tie"),
        ("cats'", "cat"),
        ("generously", "generous"),
        ("communication", "communic"),
        ("university", "universiti"),
        ("univers", "univer"),
        ("biologist", "biolog"),
        ("dying", "die"),
        ("succeeding", "succeed"),
        ("hopping", "hop"),
        ("hoping", "hope"),
        ("added", "add"),
        ("skies", "sky"),
        ("news", "news"),
        ("saying", "say"),
        ("by", "by"),
        ("naïve", "naïv"),
        ("x2y", "x2i"),
        ("éies", "éie"),
    ],
)
def test_known_stems(word: str, stem: str) -> None:
    assert _core.stem_english(word) == stem
    assert Stemmer.Stemmer("english").stemWord(word) == stem


def test_beir_corpora_words_match_reference(shared_data: Path) -> None:
    paths = require(sorted(shared_data.glob("beir/*/corpus.jsonl")), "BEIR corpora", shared_data)
    assert assert_same_stems(distinct_words(paths)) > 50_000


@pytest.mark.slow
def test_scale_corpora_words_match_reference(shared_data: Path) -> None:
    paths = require(
        sorted(shared_data.glob("scale/*/corpus.jsonl.gz")), "scale corpora", shared_data
    )
    assert assert_same_stems(distinct_words(paths)) > 200_000


# Fragments that steer random words into the algorithm's special cases.
FRAGMENTS = [
    *"abcdefghijklmnopqrstuvwxyz'",
    *"""
    é ï ß ø 2 7 ж ω y yy ay ey oy ying eed eedly ed edly ing ingly s ss sses ies ied us 's 's'
    at bl iz bb dd tt ational tional enci anci izer bli alli entli eli ousli ization ation ator
    alism iveness fulness ousness aliti iviti biliti logi ogi ogist fulli lessli li cli icate
    ative alize iciti ical ful ness al ance ence er ic able ible ant ement ment ent sion tion
    ion ism ate iti ous ive ize e ll l gener commun arsen past univers later emerg organ inter
    proc exc succ inn out cann herr earr even sk news atlas
    """.split(),
]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6).map("".join))
def test_generated_words_match_reference(word: str) -> None:
    ref = Stemmer.Stemmer("english").stemWord(word)
    assert _core.stem_english(word) == ref


@settings(max_examples=2000, deadline=None)
@given(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x2FFF), max_size=12))
def test_arbitrary_text_matches_reference(word: str) -> None:
    word = word.lower()
    assert _core.stem_english(word) == Stemmer.Stemmer("english").stemWord(word)
