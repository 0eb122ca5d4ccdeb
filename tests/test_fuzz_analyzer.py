"""Property tests of the analyzer on arbitrary input (the atheris harness ``tests/fuzz/
analyzer.py`` checks the same contract, coverage-guided): any str without lone surrogates
analyses into well-formed terms, split at whitespace, under every setting; a lone surrogate is
a ValueError; 10 MB tokens and runs of NUL, letters and CJK are handled in linear time with
the exact count of terms each mode defines."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_engine import Analyzer, AnalyzerConfig

pytest.importorskip("atheris", reason="the fuzz extra: pip install -e .[fuzz]")

from tests.fuzz.analyzer import analyzed, analyzers, one_input

MB10 = 10 * 1024 * 1024
"""Bytes of UTF-8 in the long inputs."""
CJK = "中文日本語カタカナひらがな한국어"
# Text from every kind of character the analyzer treats apart, and any other code point.
texts = st.text(
    st.sampled_from([*"aZé_0 \t\x00-'.", *CJK, "\u0301", "İ", "ß", "😀", "\u200b", "\uff21"])
    | st.characters(exclude_categories=["Cs"]),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(analyzers()))), texts, texts)
def test_terms_are_well_formed_and_split_at_whitespace(which: int, a: str, b: str) -> None:
    analyzer = analyzers()[which]
    first, second = analyzed(analyzer, a), analyzed(analyzer, b)
    assert first is not None and second is not None
    assert analyzed(analyzer, f"{a} {b}") == first + second
    assert analyzed(analyzer, f"{a}\x00{b}") == first + second


@settings(max_examples=100, deadline=None)
@given(texts, st.integers(0xD800, 0xDFFF), texts)
def test_a_lone_surrogate_is_a_value_error(a: str, surrogate: int, b: str) -> None:
    with pytest.raises(ValueError, match="lone surrogate"):
        Analyzer().analyze(a + chr(surrogate) + b)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_the_fuzz_harness_on_random_bytes(data: bytes) -> None:
    one_input(data)


@pytest.mark.parametrize("cjk", ["unigram", "bigram"])
def test_ten_megabyte_inputs(cjk: str) -> None:
    """A 10 MB word is dropped (longer than max_token_length) or kept whole (a limit above its
    length); 10 MB of NUL is no term; a 10 MB CJK run is one term per character (unigram) or
    per overlapping pair (bigram)."""
    default = Analyzer(AnalyzerConfig(cjk=cjk))  # type: ignore[arg-type]
    assert default.analyze("x" * MB10) == []
    assert default.analyze("\x00" * MB10) == []
    unlimited = Analyzer(
        AnalyzerConfig(cjk=cjk, max_token_length=2 * MB10, stemmer="none")  # type: ignore[arg-type]
    )
    assert unlimited.analyze("ab" * (MB10 // 2)) == ["ab" * (MB10 // 2)]
    stemmed = Analyzer(AnalyzerConfig(cjk=cjk, max_token_length=2 * MB10))  # type: ignore[arg-type]
    assert stemmed.analyze("ab" * (MB10 // 2) + "ing") == ["ab" * (MB10 // 2)]
    run = "中" * (MB10 // 3)
    terms = default.analyze(run)
    if cjk == "unigram":
        assert len(terms) == len(run) and set(terms) == {"中"}
    else:
        assert len(terms) == len(run) - 1 and set(terms) == {"中中"}
