"""Analyzer settings and the public text analyzer.

English (and no stemming) runs wholly in C++. Another language's stemmer or stopwords run on
each distinct word the C++ splitter gives (``lexical.word_terms``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal

from hybrid_engine import _core
from hybrid_engine.lexical.languages import ENGLISH, LANGUAGES, has_stopwords, language_name
from hybrid_engine.lexical.word_terms import WordTerms


@dataclass(frozen=True)
class AnalyzerConfig:
    """How text becomes index terms; the same settings apply to documents and queries.

    Words are maximal runs of Unicode letters, marks, digits and underscore; every other
    character (punctuation, symbols, emoji, NUL, whitespace) separates words.

    Parameters
    ----------
    lowercase : bool
        Unicode lowercasing.
    strip_accents : bool
        Remove diacritics (``"café"`` -> ``"cafe"``). With a stemmer other than English's,
        after stemming (the Snowball stemmers read the accented word), keeping the letters
        that are letters of their own in the language (Spanish "ñ", Swedish "å ä ö": see
        ``lexical.languages``).
    stopwords : bool or str
        Drop stopwords, matched on the word before stemming: True for the stemmer's language
        (Lucene's 33 English words for ``"english"`` and ``"none"``; the ``stop-words``
        package's list for the others, none for a language it lacks), False for none, or a
        language (name or ISO 639-1 code) whose list to use.
    stemmer : str
        ``"english"`` (Snowball English, Porter2, in C++), ``"none"``, or any Snowball
        stemmer by name or ISO 639-1 code (``"spanish"`` or ``"es"``, recorded as the
        name; ``lexical.languages.LANGUAGES`` lists them), run by PyStemmer.
    min_token_length, max_token_length : int
        Words outside this range of code points are dropped. CJK characters are exempt from the
        minimum.
    cjk : {"unigram", "bigram"}
        Index CJK runs as single characters or as overlapping character pairs.
    """

    lowercase: bool = True
    strip_accents: bool = True
    stopwords: bool | str = True
    stemmer: str = ENGLISH
    min_token_length: int = 2
    max_token_length: int = 64
    cjk: Literal["unigram", "bigram"] = "unigram"

    def __post_init__(self) -> None:
        # Record a language's Snowball name, whatever spelling was given; a name that is no
        # language is left for to_core to refuse, as every other bad setting is.
        for name in ("stemmer", "stopwords"):
            value = getattr(self, name)
            if isinstance(value, str) and value != "none":
                try:
                    object.__setattr__(self, name, language_name(value))
                except ValueError:
                    pass

    @classmethod
    def for_language(cls, language: str, **options: Any) -> AnalyzerConfig:
        """The settings for ``language`` (a Snowball name or ISO 639-1 code, e.g. ``"es"``):
        its stemmer and stopwords, ``options`` as given."""
        return cls(stemmer=language_name(language), **options)

    @property
    def stopword_language(self) -> str | None:
        """Whose stopword list is dropped (None: no stopwords)."""
        if self.stopwords is False:
            return None
        if self.stopwords is True:
            return ENGLISH if self.stemmer in (ENGLISH, "none", "porter") else self.stemmer
        return str(self.stopwords)

    @property
    def native(self) -> bool:
        """Whether the C++ analyzer does all of it (English or no stemming, English or no
        stopwords)."""
        return self.stemmer in (ENGLISH, "none") and self.stopword_language in (ENGLISH, None)

    def word_terms(self) -> WordTerms | None:
        """What maps the C++ splitter's words to terms, None when the C++ analyzer does."""
        if self.native:
            return None
        language = self.stopword_language
        stemmer = None if self.stemmer == "none" else self.stemmer
        return WordTerms.of(stemmer, language, self.strip_accents, self.lowercase)

    def to_dict(self) -> dict[str, Any]:
        """Plain dict, as recorded in a saved index's manifest."""
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> AnalyzerConfig:
        """Inverse of ``to_dict``; raises ``ValueError`` on unknown or missing keys."""
        names = {f.name for f in fields(cls)}
        unknown = set(values) - names
        missing = names - set(values)
        if unknown or missing:
            raise ValueError(
                f"analyzer settings: unknown keys {sorted(unknown)}, missing keys {sorted(missing)}"
            )
        return cls(**values)

    def to_core(self) -> _core.AnalyzerConfig:
        """The C++ settings object (for a language it does not stem: its words, lowercased
        as set, not folded, no stopwords, no stemming); raises ``ValueError`` for
        out-of-range values."""
        self._check_language_settings()
        config = self
        if not self.native:
            config = replace(self, strip_accents=False, stopwords=False, stemmer="none")
        core = _core.AnalyzerConfig()
        for name, value in config.to_dict().items():
            expected = bool if isinstance(getattr(core, name), bool) else type(getattr(core, name))
            if name == "stopwords" and isinstance(value, str):
                continue
            if type(value) is not expected:
                raise TypeError(f"analyzer setting {name}={value!r} must be {expected.__name__}")
            if expected is int and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
            setattr(core, name, value)
        _core.Analyzer(core)  # validates the combination, raising ValueError
        return core

    def _check_language_settings(self) -> None:
        if not isinstance(self.stemmer, str) or (
            self.stemmer != "none" and self.stemmer not in LANGUAGES
        ):
            raise ValueError(
                f"stemmer must be 'none' or a Snowball stemmer ({', '.join(sorted(LANGUAGES))}) "
                f"or its ISO 639-1 code, got {self.stemmer!r}"
            )
        if not isinstance(self.stopwords, (bool, str)):
            raise TypeError(
                f"analyzer setting stopwords={self.stopwords!r} must be a bool or a language"
            )
        if isinstance(self.stopwords, str) and (
            self.stopwords not in LANGUAGES or not has_stopwords(self.stopwords)
        ):
            listed = sorted(name for name in LANGUAGES if has_stopwords(name))
            raise ValueError(
                f"no stopword list for {self.stopwords!r}; stopwords may be True, False or one "
                f"of {', '.join(listed)}"
            )


class Analyzer:
    """Turns text into index terms exactly as an index does.

    Parameters
    ----------
    config : AnalyzerConfig, optional
        Settings; the defaults when omitted.

    Notes
    -----
    Thread-safe: ``analyze`` releases the GIL and may run from many threads at once.
    """

    def __init__(self, config: AnalyzerConfig | None = None) -> None:
        self.config = config if config is not None else AnalyzerConfig()
        self._core = _core.Analyzer(self.config.to_core())
        self._terms = self.config.word_terms()

    def analyze(self, text: str) -> list[str]:
        """Terms of ``text`` in order, duplicates kept."""
        words = self._core.analyze(text)
        if self._terms is None:
            return words
        return [term for term in self._terms.cached_terms(words) if term is not None]

    def __repr__(self) -> str:
        return f"Analyzer({self.config!r})"
