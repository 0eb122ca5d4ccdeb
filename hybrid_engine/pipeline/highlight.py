"""Highlights: a snippet of a hit's text around its best-matching stretch, the words that
match the query marked.

Analyzer-aware: a word is marked when the index's own analyzer (``lexical.Analyzer``, the
BM25 leg's settings) turns it into one of the query's terms, so "running" in the text is
marked for the query "runs" under an English stemmer, and "ñandú" for "nandu" when accents
fold. Words are the runs of Unicode word characters (``\\w+``); each distinct word is analysed
once per query, however many hits hold it (``query_matcher``).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence

from hybrid_engine.checks import check_int

WORD = re.compile(r"\w+")
SNIPPET_CHARS = 200
"""Characters of text a snippet shows by default (more where a word straddles its ends)."""
ELLIPSIS = "…"


def query_matcher(query: str, analyze: Callable[[str], list[str]]) -> Callable[[str], bool]:
    """Whether a word matches ``query``: ``analyze`` turns it into one of the query's terms;
    each distinct word analysed once."""
    terms = set(analyze(query))
    known: dict[str, bool] = {}

    def matches(word: str) -> bool:
        if word not in known:
            known[word] = any(term in terms for term in analyze(word))
        return known[word]

    return matches


def highlight(
    text: str,
    matches: Callable[[str], bool],
    *,
    chars: int = SNIPPET_CHARS,
    pre: str = "<mark>",
    post: str = "</mark>",
    escape: bool = True,
) -> str:
    """The snippet of ``text`` of about ``chars`` characters holding the most words that
    ``matches``, each wrapped in ``pre`` and ``post``, an ellipsis where it cuts the text;
    the text's start when nothing matches.

    Parameters
    ----------
    text : str
        The hit's text.
    matches : callable
        Whether a word matches the query (``query_matcher``).
    chars : int
        The snippet's length in characters, >= 1.
    pre, post : str
        Put around each matching word.
    escape : bool
        HTML-escape the text (not ``pre`` and ``post``): the snippet is then safe to put in a
        page as it is.
    """
    spans = [match.span() for match in WORD.finditer(text)]
    marked = [(start, end) for start, end in spans if matches(text[start:end])]
    begin, end = _window(text, spans, marked, chars)
    pieces = [ELLIPSIS] if begin > 0 else []
    at = begin
    for start, stop in marked:
        if start < begin or stop > end:
            continue
        pieces += [_piece(text[at:start], escape), pre, _piece(text[start:stop], escape), post]
        at = stop
    pieces.append(_piece(text[at:end], escape))
    if end < len(text):
        pieces.append(ELLIPSIS)
    return "".join(pieces)


def highlight_rows(
    queries: Sequence[str],
    texts: Sequence[Sequence[str]],
    analyze: Callable[[str], list[str]],
    *,
    chars: int,
    pre: str,
    post: str,
    escape: bool,
) -> list[list[str]]:
    """``highlight`` of each text of ``texts[q]`` for query ``queries[q]``.

    Raises
    ------
    ValueError
        ``chars < 1``.
    """
    check_int("chars", chars, 1)
    out = []
    for query, row in zip(queries, texts, strict=True):
        matches = query_matcher(query, analyze)  # one word cache for all of the query's hits
        out.append(
            [
                highlight(text, matches, chars=chars, pre=pre, post=post, escape=escape)
                for text in row
            ]
        )
    return out


def _piece(text: str, escape: bool) -> str:
    return html.escape(text, quote=False) if escape else text


def _window(
    text: str, spans: list[tuple[int, int]], marked: list[tuple[int, int]], chars: int
) -> tuple[int, int]:
    """``[begin, end)`` of the snippet: about ``chars`` characters starting at the matching
    word that begins the most matches within that length (the text's start without one), cut
    at word ends (never inside a word)."""
    if len(text) <= chars:
        return 0, len(text)
    begin, best = 0, 0
    for i, (start, _) in enumerate(marked):
        inside = sum(1 for s, e in marked[i:] if e <= start + chars)
        if inside > best:
            begin, best = start, inside
    if best:  # start a little before the first match, at the start of the word there
        lead = max(0, begin - chars // 5)
        begin = max((s for s, _ in spans if s <= lead), default=0)
    end = begin + chars
    inside_word = next((e for s, e in spans if s < end < e), None)
    return begin, min(len(text), inside_word if inside_word is not None else end)


class Highlighted:
    """What a search result needs to highlight its hits: ``highlights`` over the query texts,
    the hits' texts and the analyzer that ``_highlighted`` gives (one per result type)."""

    def highlights(
        self,
        *,
        chars: int = SNIPPET_CHARS,
        pre: str = "<mark>",
        post: str = "</mark>",
        escape: bool = True,
    ) -> list[list[str]]:
        """Each hit's snippet, aligned with ``hits()``: about ``chars`` characters of its
        text around the stretch with the most words matching the query, those wrapped in
        ``pre`` and ``post`` (``highlight.highlight``: a word matches when the index's BM25
        analyzer turns it into a query term, so a stemmed or folded match marks the word as
        written), the text HTML-escaped unless ``escape`` is False. A parent document's
        snippet is cut from its best-matching chunk (``ParentHit.best_span``).

        Raises
        ------
        ValueError
            ``chars < 1``, or the result was not returned by a search (it holds no queries
            or no analyzer).
        """
        queries, texts, analyze = self._highlighted()
        return highlight_rows(
            queries, texts, analyze, chars=chars, pre=pre, post=post, escape=escape
        )

    def _highlighted(
        self,
    ) -> tuple[Sequence[str], list[list[str]], Callable[[str], list[str]]]:
        """The query texts, each query's hits' texts to cut snippets from, and the analyzer
        deciding a match; a ValueError naming the search where the result holds none."""
        raise NotImplementedError
