"""Behaviour of the analyzer: configuration, Unicode splitting, folding, bm25s parity.

Ill-formed UTF-8 (stray continuation bytes, overlongs, encoded surrogates) cannot be reached
from Python: the binding encodes ``str`` as UTF-8 and raises ValueError on lone surrogates
before the C++ analyzer runs. The C++ splitter treats such bytes as separators and never reads
past the end.
"""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from pathlib import Path

import pytest

from hybrid_engine import Analyzer, AnalyzerConfig

RAW = dict(lowercase=False, strip_accents=False, stopwords=False, stemmer="none")
ROOT = Path(__file__).resolve().parents[1]


def analyze(text: str, **config: object) -> list[str]:
    return Analyzer(AnalyzerConfig(**config)).analyze(text)  # type: ignore[arg-type]


# --- configuration -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"stemmer": "klingon"},
            r"stemmer must be 'none' or a Snowball stemmer \(arabic, .*, "
            r"yiddish\) or its ISO 639-1 code, got 'klingon'",
        ),
        (
            {"stopwords": "basque"},
            r"no stopword list for 'basque'; stopwords may be True, False "
            r"or one of arabic, .*spanish",
        ),
        ({"stopwords": "klingon"}, r"no stopword list for 'klingon'"),
        ({"cjk": "trigram"}, r"cjk must be 'unigram' or 'bigram', got 'trigram'"),
        ({"min_token_length": 0}, r"min_token_length must be at least 1, got 0"),
        (
            {"min_token_length": 5, "max_token_length": 4},
            r"max_token_length must be at least min_token_length \(5\), got 4",
        ),
    ],
)
def test_invalid_config_names_field_and_allowed_values(config: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Analyzer(AnalyzerConfig(**config))


def test_defaults() -> None:
    assert analyze("The Runners were RUNNING to Café Zoë") == "runner were run cafe zoe".split()


# --- word boundaries ---------------------------------------------------------------------


def test_punctuation_apostrophes_and_digits() -> None:
    assert (
        analyze("don't stop: covid19, 3.14 e-mail snake_case", **RAW)
        == "don stop covid19 14 mail snake_case".split()
    )
    assert analyze("don't 3.14", **RAW, min_token_length=1) == ["don", "t", "3", "14"]


def test_separators_emoji_controls_and_nul() -> None:
    text = "ab\x00cd\tef\u200bgh😀ij\u2028kl\x7fmn©op"
    assert analyze(text, **RAW) == ["ab", "cd", "ef", "gh", "ij", "kl", "mn", "op"]


def test_case_folding_and_accent_stripping() -> None:
    text = "Ångström NAÏVE Crème Ñandú Øre straße ΆΛΦΑ Ёлка İstanbul"
    assert (
        analyze(text, **{**RAW, "lowercase": True})
        == "ångström naïve crème ñandú øre straße άλφα ёлка istanbul".split()
    )
    assert (
        analyze(text, **{**RAW, "lowercase": True, "strip_accents": True})
        == "angstrom naive creme nandu øre straße αλφα елка istanbul".split()
    )
    assert analyze("Ångström", **{**RAW, "strip_accents": True}) == ["Angstrom"]


def test_combining_marks_stay_inside_words() -> None:
    decomposed = unicodedata.normalize("NFD", "café naïve")
    assert analyze(decomposed, **RAW) == decomposed.split()
    assert analyze(decomposed, **{**RAW, "strip_accents": True}) == ["cafe", "naive"]
    # Script-specific marks are part of the letter and are never stripped.
    assert analyze("हिन्दी", **{**RAW, "strip_accents": True}) == ["हिन्दी"]


def test_cjk_unigrams_and_bigrams() -> None:
    text = "東京タワー is 한국어 and x中y 日"
    assert analyze(text, **RAW) == "東 京 タ ワ ー is 한 국 어 and 中 日".split()
    assert (
        analyze(text, **RAW, cjk="bigram") == "東京 京タ タワ ワー is 한국 국어 and 中 日".split()
    )
    # CJK tokens are exempt from the minimum length but not from the maximum.
    assert analyze("中文", **RAW, cjk="bigram", min_token_length=3, max_token_length=3) == ["中文"]
    assert analyze("中文", **RAW, cjk="bigram", max_token_length=1, min_token_length=1) == []


def test_mixed_scripts() -> None:
    text = "Москва-2024 αβγ العربية עברית ไทย"
    assert analyze(text, **RAW) == ["Москва", "2024", "αβγ", "العربية", "עברית", "ไทย"]


# --- normalisation -----------------------------------------------------------------------


def test_length_limits_count_code_points_before_stemming() -> None:
    assert analyze("ab é ééé abcdefghij", **RAW, min_token_length=3, max_token_length=9) == ["ééé"]
    assert analyze("running", stemmer="english", max_token_length=7) == ["run"]
    assert analyze("running", stemmer="english", max_token_length=6) == []


def test_stopwords_before_stemming_and_case_insensitive() -> None:
    assert analyze("the this these thus is", stemmer="none") == ["thus"]
    assert analyze("The THIS thus", **{**RAW, "stopwords": True}) == ["thus"]
    # "thing" stems to "thing", "tis" stays: only the unstemmed word is matched.
    assert analyze("withs into intos", stemmer="english") == ["with", "into"]


def test_large_document() -> None:
    text = "Lorem ipsum dolor sit amet, consectetur adipiscing elit; 東京 naïve. " * 150_000
    assert len(text.encode()) > 10_000_000
    terms = analyze(text)
    assert len(terms) == 150_000 * 11
    assert terms[:10] == "lorem ipsum dolor sit amet consectetur adipisc elit 東 京".split()


def test_surrogates_are_rejected_by_the_binding() -> None:
    # A lone surrogate cannot be encoded as UTF-8: a clear error, not a crash.
    with pytest.raises(ValueError, match="text is not valid Unicode"):
        analyze("ab\ud800cd")


def test_non_str_text_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="text is bytes, expected str"):
        analyze(b"abc")  # type: ignore[arg-type]


# --- Unicode tables ----------------------------------------------------------------------


def table_version() -> str | None:
    generated = ROOT / "csrc" / "src" / "unicode_tables.cpp"
    if not generated.exists():
        return None
    match = re.search(r"from Unicode (\S+) ", generated.read_text(encoding="utf-8")[:200])
    return match.group(1) if match else None


def test_word_characters_are_python_word_characters_plus_marks() -> None:
    version = table_version()
    if version is not None and version != unicodedata.unidata_version:
        pytest.skip(f"tables are Unicode {version}, Python has {unicodedata.unidata_version}")
    chars = [chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF]
    word = re.compile(r"\w")
    expected = [ch for ch in chars if word.match(ch) or unicodedata.category(ch).startswith("M")]
    assert analyze(" ".join(chars), **RAW, min_token_length=1, max_token_length=1) == expected
    lowered = analyze(" ".join(expected), **{**RAW, "lowercase": True}, min_token_length=1)
    assert lowered == [ch.lower()[0] for ch in expected]


# --- parity with bm25s's default tokenizer ---------------------------------------------


def bm25s_terms(text: str, stemmer: object, stopwords: frozenset[str]) -> list[str]:
    words = [w for w in re.findall(r"(?u)\b\w\w+\b", text.lower()) if w not in stopwords]
    return stemmer.stemWords(words)


@pytest.mark.slow
@pytest.mark.parametrize("corpus", ["scifact", "cisi"])
def test_matches_bm25s_default_pipeline(corpus: str, shared_data: Path) -> None:
    stemmer_module = pytest.importorskip("Stemmer")
    stopwords_module = pytest.importorskip("bm25s.stopwords")
    path = shared_data / "beir" / corpus / "corpus.jsonl"
    if not path.exists():
        pytest.skip(f"{path} not found (set HYBRID_ENGINE_DATA)")
    analyzer = Analyzer(
        AnalyzerConfig(
            lowercase=True,
            strip_accents=False,
            stopwords=True,
            stemmer="english",
            min_token_length=2,
        )
    )
    stemmer = stemmer_module.Stemmer("english")
    stopwords = frozenset(stopwords_module.STOPWORDS_EN)
    assert len(stopwords) == 33
    checked = 0
    with path.open(encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            text = doc.get("title", "") + " " + doc["text"]
            assert analyzer.analyze(text) == bm25s_terms(text, stemmer, stopwords), doc["_id"]
            checked += 1
    assert checked > 1000
