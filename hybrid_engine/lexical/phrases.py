"""Phrase queries: the phrases a query quotes, and the documents of an index with positions
that hold them.

A phrase is a run of words in double quotes (``"..."`` or ``“...”``) in a query's text. It
matches a document whose indexed terms hold the phrase's terms one after the other: both go
through the index's analyzer, so a phrase matches what the analyzer's token stream
(``Analyzer.analyze``) of the document holds as a run, stemmed and folded as everything else,
and the words the analyzer drops (stopwords, one-letter words) are skipped on both sides
("bank of america" matches "bank america" too). A query's phrases are required: its hits hold
every one of them. The query's words, quoted or not, are searched as they always are (the
quotes are punctuation to the analyzer), so a phrase narrows the hits and scoring stays BM25.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np

from hybrid_engine.errors import IndexFormatError
from hybrid_engine.lexical._phrase import MALFORMED, phrase_documents
from hybrid_engine.result import PAD_ID, SearchResult

_QUOTED = re.compile(r'"([^"]*)"|“([^”]*)”')
_BLANK_QUOTES = str.maketrans('"“”', "   ")

Phrases = tuple[str, ...]
"""A query's phrases, sorted, without repeats (empty: none)."""
_Key = TypeVar("_Key")


def quoted_phrases(query: str) -> Phrases:
    """The phrases ``query`` quotes (sorted, without repeats, each stripped; empty ones left
    out). A quote without its closing one quotes nothing.

    Examples
    --------
    >>> quoted_phrases('"heart attack" risk “blood  pressure”')
    ('blood  pressure', 'heart attack')
    >>> quoted_phrases('an unclosed "quote')
    ()
    """
    found = {(a or b).strip() for a, b in _QUOTED.findall(query)}
    return tuple(sorted(phrase for phrase in found if phrase))


def unquoted(query: str) -> str:
    """``query`` with its quote characters blanked: the same terms to the analyzer (quotes
    are punctuation), no phrases to an index with positions (for a search whose phrases are
    applied already, as masks)."""
    return query.translate(_BLANK_QUOTES)


def phrase_groups(phrases: Sequence[Phrases]) -> list[tuple[Phrases, np.ndarray]]:
    """The queries of a batch grouped by their ``phrases``: ``(phrases, rows)`` per distinct
    set, in the order each first occurs, ``rows`` int64 ascending."""
    rows: dict[Phrases, list[int]] = {}
    for row, found in enumerate(phrases):
        rows.setdefault(found, []).append(row)
    return [(found, np.asarray(group, dtype=np.int64)) for found, group in rows.items()]


def stitched(
    n_queries: int,
    groups: Sequence[tuple[_Key, np.ndarray]],
    search: Callable[[_Key, np.ndarray], SearchResult],
) -> SearchResult:
    """One result of ``n_queries`` rows from ``search(key, rows)`` of each ``(key, rows)``
    group (as ``phrase_groups`` gives them: together every row once), each giving one row
    per row asked, all of one width."""
    if len(groups) == 1:
        return search(*groups[0])
    parts = [(rows, search(phrases, rows)) for phrases, rows in groups]
    width = parts[0][1].ids.shape[1]
    ids = np.full((n_queries, width), PAD_ID, dtype=np.int64)
    scores = np.full((n_queries, width), -np.inf, dtype=np.float32)
    for rows, part in parts:
        ids[rows] = part.ids
        scores[rows] = part.scores
    return SearchResult(ids, scores)


def matching_documents(arrays: Mapping[str, np.ndarray], terms: np.ndarray) -> np.ndarray:
    """The documents (int64, ascending) of an index with positions (its ``arrays``) that
    hold the terms ``terms`` (int32 ids, at least one, postings checked) one after the other.

    Raises
    ------
    IndexFormatError
        A positions run read is malformed.
    """
    docs, count = phrase_documents(
        arrays["posting_offsets"],
        arrays["postings"],
        arrays["position_offsets"],
        arrays["positions"],
        terms,
    )
    if count == MALFORMED:
        raise IndexFormatError(
            "the positions of a phrase's terms are malformed; the index is corrupt, rebuild it"
        )
    return docs
