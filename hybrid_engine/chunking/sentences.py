"""Sentence boundaries as character offsets, from sentencex.

Why sentencex (Wikimedia's segmenter, a Rust extension, MIT): of the four registry libraries
measured on the 5,183 SciFact abstracts (docs/chunking.md has the tables) it is the fastest
(0.16 s for the corpus, against 1.7 s for blingfire, 8.6 s for syntok and 50 s for pysbd), its
offsets are exact characters (accents, combining marks, CJK, emoji ZWJ sequences included;
pysbd's ``char_span`` got 25 spans wrong and blingfire dropped a U+200E mark), it made no false
split after "et al.", "e.g."/"i.e.", "Fig. 2", "vs." or inside a decimal, and it is kept up (a
2026 release, a 4 MB wheel per Python version). Its weakness is recall: no boundary between a
"<" and a later ">" (read as brackets) or after some enumerations ("(3) ..."), 119 of 27,124
clear "word. Capital" boundaries missed (blingfire 3, syntok 3, pysbd 17). A missed boundary
only makes a longer sentence, which the chunker cuts to its budget between words (29 SciFact
sentences over 200 tokens, against 20 with blingfire). blingfire, the most accurate there,
ships a 99 MB ctypes-loaded x86-64 library last released in 2021. nltk's punkt needs a data
download at run time.
"""

from __future__ import annotations

from sentencex import get_sentence_boundaries

LANGUAGE = "en"
"""The language whose rules (abbreviations, terminators) sentencex applies."""


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """The sentences of ``text`` as ``(start, end)`` character offsets, in order.

    A sentence runs from one of sentencex's sentence starts to the next, stripped of
    surrounding whitespace (``text[start:end]`` neither starts nor ends with whitespace);
    blank stretches (paragraph breaks) give no span. Between two consecutive spans lies only
    whitespace, so every non-whitespace character of ``text`` lies in exactly one span.

    Parameters
    ----------
    text : str
        Any text; empty or blank gives ``[]``.

    Returns
    -------
    list of (int, int)
        ``0 <= start < end <= len(text)``, strictly increasing and non-overlapping.
    """
    starts = sorted({0, *(int(b["start_index"]) for b in get_sentence_boundaries(LANGUAGE, text))})
    spans = []
    for start, end in zip(starts, [*starts[1:], len(text)], strict=True):
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            spans.append((start, end))
    return spans
