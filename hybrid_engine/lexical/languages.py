"""The languages the analyzer stems and filters: Snowball stemmers, stopword lists, folding.

Stemming uses the Snowball algorithms as PyStemmer ships them (libstemmer, the reference C
implementation; the C++ English stemmer of ``csrc/`` equals its ``english``). Stopword lists
come from the ``stop-words`` package (python-stop-words, BSD, pinned in ``pyproject.toml`` so
an index's analysis never changes under it); English keeps Lucene's 33 words of the C++
analyzer. Languages without a list in that package have no stopwords.

Accents fold after stemming, because the Snowball stemmers read the accented word (Spanish
removes its acute accents itself, French keeps them in its stems): a folded stem is what a
query typed without accents also reaches. Letters that are letters of their own in the
language (Spanish "ñ", the Nordic "å ä ö", Turkish "ç ğ ö ş ü", Russian "й") are kept.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from functools import cache

ENGLISH = "english"
LUCENE_ENGLISH = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their "
    "then there these they this to was will with".split()
)
"""Lucene's classic English stopwords, the C++ analyzer's list (``csrc/src/stopwords.cpp``)."""


@dataclass(frozen=True)
class Language:
    """One stemmer's language.

    Attributes
    ----------
    name : str
        The Snowball algorithm (PyStemmer's name).
    code : str
        ISO 639-1 code ("" where the algorithm is a variant: ``porter``, ``dutch_porter``).
    keep : str
        Letters that folding keeps (lowercase).
    stopwords : str or None
        The ``stop-words`` package's list for the language, None when it has none.
    """

    name: str
    code: str
    keep: str = ""
    stopwords: str | None = None


_TABLE = (
    Language("arabic", "ar", stopwords="arabic"),
    Language("armenian", "hy"),
    Language("basque", "eu"),
    Language("catalan", "ca", "ç", "catalan"),
    Language("czech", "cs", "áčďéěíňóřšťúůýž", "czech"),
    Language("danish", "da", "æøå", "danish"),
    Language("dutch", "nl", stopwords="dutch"),
    Language("dutch_porter", "", stopwords="dutch"),
    Language(ENGLISH, "en"),
    Language("esperanto", "eo", "ĉĝĥĵŝŭ"),
    Language("estonian", "et", "äöõüšž"),
    Language("finnish", "fi", "åäö", "finnish"),
    Language("french", "fr", stopwords="french"),
    Language("german", "de", stopwords="german"),
    Language("greek", "el", stopwords="greek"),
    Language("hindi", "hi", stopwords="hindi"),
    Language("hungarian", "hu", "áéíóöőúüű", "hungarian"),
    Language("indonesian", "id", stopwords="indonesian"),
    Language("irish", "ga", "áéíóú"),
    Language("italian", "it", stopwords="italian"),
    Language("lithuanian", "lt", "ąčęėįšųūž"),
    Language("nepali", "ne"),
    Language("norwegian", "no", "æøå", "norwegian"),
    Language("persian", "fa", stopwords="persian"),
    Language("polish", "pl", "ąćęłńóśźż", "polish"),
    Language("porter", ""),
    Language("portuguese", "pt", stopwords="portuguese"),
    Language("romanian", "ro", "ăâîșț", "romanian"),
    Language("russian", "ru", "й", "russian"),
    Language("serbian", "sr", "čćđšž"),
    Language("sesotho", "st"),
    Language("spanish", "es", "ñ", "spanish"),
    Language("swedish", "sv", "åäö", "swedish"),
    Language("tamil", "ta"),
    Language("turkish", "tr", "çğıöşü", "turkish"),
    Language("yiddish", "yi"),
)
LANGUAGES = {language.name: language for language in _TABLE}
"""Every stemmer the analyzer takes, by Snowball name."""
_BY_CODE = {language.code: language.name for language in _TABLE if language.code}
_BY_CODE["nb"] = "norwegian"


def language_name(language: str) -> str:
    """The Snowball name of ``language`` (a name such as ``"spanish"`` or an ISO 639-1 code
    such as ``"es"``, any case); ValueError naming the choices otherwise."""
    if not isinstance(language, str):
        raise TypeError(f"language must be a str such as 'es' or 'spanish', got {language!r}")
    key = language.strip().lower()
    name = _BY_CODE.get(key, key)
    if name not in LANGUAGES:
        codes = ", ".join(sorted(_BY_CODE))
        raise ValueError(
            f"unknown language {language!r}; give a Snowball stemmer name "
            f"({', '.join(sorted(LANGUAGES))}) or one of the codes {codes}"
        )
    return name


def has_stopwords(language: str) -> bool:
    """Whether the Snowball language ``language`` has a stopword list."""
    return language == ENGLISH or LANGUAGES[language].stopwords is not None


@cache
def stopword_list(language: str) -> frozenset[str]:
    """The stopwords of the Snowball language ``language``: Lucene's 33 for English, the
    ``stop-words`` package's list otherwise (lowercase NFC; empty when it has none)."""
    if language == ENGLISH:
        return LUCENE_ENGLISH
    source = LANGUAGES[language].stopwords
    if source is None:
        return frozenset()
    import stop_words

    words = stop_words.get_stop_words(source, cache=False)
    return frozenset(unicodedata.normalize("NFC", word).lower() for word in words if word)


_FOLDED_SCRIPTS = ("LATIN ", "GREEK ", "CYRILLIC ")
_FOLDED_BLOCKS = ((0x80, 0x530), (0x1E00, 0x2000))
"""Latin-1 to Cyrillic, and Latin Extended Additional with Greek Extended: where the letters
with diacritics of the folded scripts are."""


def _folded(char: str) -> str:
    """``char`` without its diacritics when it is a Latin, Greek or Cyrillic letter (the
    scripts the C++ analyzer folds); a lone combining mark is removed; else unchanged."""
    if unicodedata.combining(char):
        return ""
    if not unicodedata.name(char, "").startswith(_FOLDED_SCRIPTS):
        return char
    base = "".join(c for c in unicodedata.normalize("NFD", char) if not unicodedata.combining(c))
    return base if len(base) == 1 else char  # never longer: U+0149 decomposes to two letters


@cache
def _fold_table(keep: str) -> dict[int, str]:
    """``str.translate``'s table of ``fold``: every folded character of the blocks, but
    those of ``keep``."""
    table = {}
    for start, stop in _FOLDED_BLOCKS:
        for code in range(start, stop):
            char = chr(code)
            if char not in keep and _folded(char) != char:
                table[code] = _folded(char)
    return table


def fold(word: str, keep: str = "") -> str:
    """``word`` with diacritics removed from its Latin, Greek and Cyrillic letters (and
    combining marks of those blocks removed), but for the letters in ``keep``."""
    if word.isascii():
        return word
    return word.translate(_fold_table(keep))
