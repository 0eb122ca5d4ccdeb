"""Fuzz the text analyzer: arbitrary bytes read as UTF-8, UTF-16 (lone surrogates), Latin-1
or code points, through every analyzer setting (both CJK modes, stemmer or none, case and
accent folding, stopwords, token lengths).

Contract checked: a text holding a lone surrogate is a ``ValueError`` and every other text
gives a list of terms, each a non-empty str of at most ``max_token_length`` code points with
no whitespace or NUL; analysis is deterministic and splits at whitespace (``a + " " + b``
gives the terms of ``a`` then those of ``b``).
"""

from __future__ import annotations

import itertools
import sys
from functools import cache

import atheris

from hybrid_engine import Analyzer, AnalyzerConfig
from tests.fuzz._harness import Unexpected, main

LENGTHS = ((2, 64), (1, 1), (1, 1 << 20), (3, 5))
"""(min_token_length, max_token_length) pairs the harness picks from."""


@cache
def analyzers() -> list[Analyzer]:
    """One analyzer per combination of settings."""
    out = []
    for cjk, stemmer, lowercase, accents, stopwords, (low, high) in itertools.product(
        ("unigram", "bigram"),
        ("english", "none", "spanish", "turkish", "russian", "arabic"),
        (True, False),
        (True, False),
        (True, False),
        LENGTHS,
    ):
        config = AnalyzerConfig(
            lowercase=lowercase,
            strip_accents=accents,
            stopwords=stopwords,
            stemmer=stemmer,  # type: ignore[arg-type]
            min_token_length=low,
            max_token_length=high,
            cjk=cjk,  # type: ignore[arg-type]
        )
        out.append(Analyzer(config))
    return out


def text_of(fdp: atheris.FuzzedDataProvider) -> str:
    """A text read from the input in one of four ways."""
    how = fdp.ConsumeIntInRange(0, 3)
    if how == 3:
        return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 4096))
    raw = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 4096))
    if how == 0:
        return raw.decode("utf-8", "replace")
    if how == 1:
        return raw[: len(raw) // 2 * 2].decode("utf-16-le", "surrogatepass")
    return raw.decode("latin-1")


def has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


def analyzed(analyzer: Analyzer, text: str) -> list[str] | None:
    """The terms, or None for a text with a lone surrogate (which must be refused)."""
    try:
        terms = analyzer.analyze(text)
    except ValueError as exc:
        if not has_surrogate(text):
            raise Unexpected(f"ValueError for a text without surrogates: {exc}") from exc
        return None
    if has_surrogate(text):
        raise Unexpected("a text with a lone surrogate was analysed, not refused")
    limit = analyzer.config.max_token_length
    if not isinstance(terms, list):
        raise Unexpected(f"analyze returned {type(terms).__name__}")
    for term in terms:
        if not isinstance(term, str) or not term or len(term) > limit:
            raise Unexpected(f"term {term!r} breaks the length limits (max {limit})")
        if any(c.isspace() or c == "\0" for c in term):
            raise Unexpected(f"term {term!r} holds a separator")
    return terms


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    analyzer = fdp.PickValueInList(analyzers())
    first, second = text_of(fdp), text_of(fdp)
    terms = analyzed(analyzer, first)
    if terms is None:
        return
    if analyzer.analyze(first) != terms:
        raise Unexpected("analysis is not deterministic")
    rest = analyzed(analyzer, second)
    if rest is not None and analyzed(analyzer, f"{first} {second}") != terms + rest:
        raise Unexpected(
            f"analyze(a + ' ' + b) != analyze(a) + analyze(b) for {first!r}, {second!r}"
        )


if __name__ == "__main__":
    main(one_input, sys.argv)
