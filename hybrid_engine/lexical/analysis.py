"""Analyzer settings and the public text analyzer (the work is done in C++)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from hybrid_engine import _core


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
        Remove diacritics (``"café"`` -> ``"cafe"``).
    stopwords : bool
        Drop Lucene's 33 English stopwords (matched before stemming).
    stemmer : {"english", "none"}
        Snowball English (Porter2) stemming, or none.
    min_token_length, max_token_length : int
        Words outside this range of code points are dropped. CJK characters are exempt from the
        minimum.
    cjk : {"unigram", "bigram"}
        Index CJK runs as single characters or as overlapping character pairs.
    """

    lowercase: bool = True
    strip_accents: bool = True
    stopwords: bool = True
    stemmer: Literal["english", "none"] = "english"
    min_token_length: int = 2
    max_token_length: int = 64
    cjk: Literal["unigram", "bigram"] = "unigram"

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
        """The C++ settings object; raises ``ValueError`` for out-of-range values."""
        core = _core.AnalyzerConfig()
        for name, value in self.to_dict().items():
            expected = bool if isinstance(getattr(core, name), bool) else type(getattr(core, name))
            if type(value) is not expected:
                raise TypeError(f"analyzer setting {name}={value!r} must be {expected.__name__}")
            if expected is int and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
            setattr(core, name, value)
        _core.Analyzer(core)  # validates the combination, raising ValueError
        return core


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

    def analyze(self, text: str) -> list[str]:
        """Terms of ``text`` in order, duplicates kept."""
        return self._core.analyze(text)

    def __repr__(self) -> str:
        return f"Analyzer({self.config!r})"
