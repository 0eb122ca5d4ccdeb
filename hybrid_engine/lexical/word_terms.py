"""Words to index terms for the languages the C++ analyzer does not stem itself.

The C++ analyzer splits and lowercases (``AnalyzerConfig.to_core`` gives it no stemmer, no
stopwords and no folding then); each distinct word is then mapped here: dropped when it is a
stopword, else stemmed by the language's Snowball stemmer (PyStemmer), then folded
(``languages.fold``). An index maps its vocabulary once (``IndexBuilder.finish_mapped``), a
query its words, through a cache: the work is per distinct word, not per occurrence.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

from hybrid_engine.lexical.languages import LANGUAGES, fold, stopword_list

CACHE_LIMIT = 1 << 20
"""Distinct query words a ``WordTerms`` remembers; the cache starts over past it."""
_ABSENT = object()


class WordTerms:
    """The index term of each word, or None for a dropped one (a stopword, or a word its
    stemmer reduces to nothing, such as Arabic's tatweel).

    Parameters
    ----------
    stemmer : str or None
        A Snowball name (``languages.LANGUAGES``), or None for no stemming.
    stopwords : frozenset of str
        Lowercase words to drop, matched on the word before stemming (and on its folded
        form when ``strip_accents``).
    strip_accents : bool
        Fold each term after stemming, keeping the stemmer language's own letters.
    lowercase : bool
        Whether the words are lowercase already (else stopwords match their lowercase).

    Notes
    -----
    Thread-safe: the cache and the stemmer (which is not) are used under a lock.
    """

    def __init__(
        self,
        stemmer: str | None,
        stopwords: frozenset[str],
        strip_accents: bool,
        lowercase: bool = True,
    ) -> None:
        import Stemmer

        self._stemmer = Stemmer.Stemmer(stemmer) if stemmer is not None else None
        self._keep = LANGUAGES[stemmer].keep if stemmer is not None else ""
        self._fold = strip_accents
        self._lowercase = lowercase
        folded = {fold(w, self._keep) for w in stopwords} if strip_accents else set()
        self._stopwords = stopwords | folded
        self._cache: dict[str, str | None] = {}
        self._lock = threading.Lock()

    @classmethod
    def of(
        cls,
        stemmer: str | None,
        stopwords: str | None,
        strip_accents: bool,
        lowercase: bool = True,
    ) -> WordTerms:
        """The map of a stemmer and the stopwords of a language (Snowball names; None for
        none)."""
        words = stopword_list(stopwords) if stopwords is not None else frozenset()
        return cls(stemmer, words, strip_accents, lowercase)

    def terms(self, words: Sequence[str]) -> list[str | None]:
        """The term of each word (None: dropped), without caching them (a vocabulary)."""
        with self._lock:
            return self._map(words)

    def cached_terms(self, words: Sequence[str]) -> list[str | None]:
        """``terms``, remembering each distinct word (queries)."""
        cache = self._cache
        # Read into a local dict first: another thread may clear the cache meanwhile.
        known = {w: cache.get(w, _ABSENT) for w in words}
        missing = [w for w, term in known.items() if term is _ABSENT]
        if missing:
            with self._lock:
                if len(cache) + len(missing) > CACHE_LIMIT:
                    cache.clear()
                mapped = dict(zip(missing, self._map(missing), strict=True))
                cache.update(mapped)
            known.update(mapped)
        return [known[w] for w in words]  # type: ignore[misc]

    def _map(self, words: Sequence[str]) -> list[str | None]:
        words = [w if unicodedata.is_normalized("NFC", w) else _nfc(w) for w in words]
        stop = self._stopwords
        if self._lowercase:
            kept = [w for w in words if w not in stop]
        else:
            kept = [w for w in words if w.lower() not in stop]
        stems = self._stemmer.stemWords(kept) if self._stemmer is not None else kept
        if self._fold:
            stems = [fold(s, self._keep) for s in stems]
        mapped = dict(zip(kept, stems, strict=True))
        return [mapped.get(w) or None for w in words]  # a word stemmed to nothing is dropped


def _nfc(word: str) -> str:
    return unicodedata.normalize("NFC", word)


class MappedQueryEncoder:
    """Queries to term ids and weights, as ``_core.QueryEncoder`` gives them, for an index of
    mapped terms: the C++ analyzer's words, mapped by ``word_terms``, looked up by ``lookup``
    (the C++ encoder over the index's vocabulary of terms).

    Thread-safe.
    """

    def __init__(self, analyzer: Any, word_terms: WordTerms, lookup: Any) -> None:
        self._analyzer = analyzer
        self._terms = word_terms
        self._lookup = lookup

    def encode(self, queries: Sequence[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(terms int32, weights float32, offsets int64)``: query ``q``'s distinct terms in
        the index, in order of first use, ``terms[offsets[q]:offsets[q + 1]]``, each
        weighted by its count in the query."""
        terms: list[int] = []
        weights: list[float] = []
        offsets = [0]
        ids: dict[str, int] = {}
        for query in queries:
            counts: dict[int, int] = {}
            for term in self._terms.cached_terms(self._analyzer.analyze(query)):
                if term is None:
                    continue
                t = ids.get(term)
                if t is None:
                    t = ids[term] = self._lookup.term_id(term)
                if t >= 0:
                    counts[t] = counts.get(t, 0) + 1
            terms.extend(counts)
            weights.extend(counts.values())
            offsets.append(len(terms))
        return (
            np.asarray(terms, np.int32),
            np.asarray(weights, np.float32),
            np.asarray(offsets, np.int64),
        )

    def term_id(self, term: str) -> int:
        """Id of an index term, -1 when absent."""
        return int(self._lookup.term_id(term))
