"""A light guard against the loops of small base models: keep the text up to the first
sentence that repeats an earlier one."""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def cut_repetition(text: str) -> str:
    """``text`` cut before the first sentence (or line) that repeats an earlier one.

    Sentences end at ``.``, ``!`` or ``?`` followed by white space, or at a line break; two are
    the same when equal after case folding, collapsing white space and dropping the end mark
    (so a repeat cut off by the token cap still counts). Text with no repeated
    sentence comes back unchanged; the result never ends in white space it did not end in
    before the cut.

    Parameters
    ----------
    text : str
        Generated text.

    Returns
    -------
    str
        The prefix of ``text`` before the second occurrence of a sentence, right-stripped;
        ``text`` itself when nothing repeats.
    """
    seen: set[str] = set()
    start = 0
    for end_match in [*_SENTENCE_END.finditer(text), None]:
        end = len(text) if end_match is None else end_match.start()
        key = " ".join(text[start:end].split()).casefold().rstrip(".!?")
        if key:
            if key in seen:
                return text[:start].rstrip()
            seen.add(key)
        if end_match is not None:
            start = end_match.end()
    return text
