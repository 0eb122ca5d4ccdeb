"""Token counts of stretches of a text, and the cutting of an over-long sentence at token
boundaries, in a ``tokenizers.Tokenizer`` that neither truncates nor pads.

Counts never include special tokens ([CLS], [SEP]): they are the tokens of the stretch's own
text, which is what the packer adds up and what ``Chunk.num_tokens`` reports.
"""

from __future__ import annotations

from collections.abc import Sequence

from tokenizers import Tokenizer


def count_tokens(tokenizer: Tokenizer, text: str) -> int:
    """Tokens of ``text``, special tokens not counted."""
    return len(tokenizer.encode(text, add_special_tokens=False).ids)


def count_each(tokenizer: Tokenizer, texts: list[str]) -> list[int]:
    """``count_tokens`` of every text, in one batch (the tokenizer's own threads)."""
    if not texts:
        return []
    return [len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]


def _cut(offsets: Sequence[tuple[int, int]], words: Sequence[int | None], p: int, q: int) -> int:
    """Where a piece starting at token ``p`` ends: the largest token index in ``(p, q]`` that
    starts a word, else the largest there that starts a new character (tokens may share one,
    as the jamo of a Hangul syllable do), else the first new character after ``q`` (or the
    end): a piece never ends inside a character."""
    n = len(offsets)
    if q >= n:
        return n
    between_characters = [c for c in range(q, p, -1) if offsets[c][0] >= offsets[c - 1][1]]
    for c in between_characters:
        if words[c] is None or words[c] != words[c - 1]:
            return c
    if between_characters:
        return between_characters[0]
    return next((c for c in range(q + 1, n) if offsets[c][0] >= offsets[c - 1][1]), n)


def split_long(
    tokenizer: Tokenizer, text: str, start: int, end: int, max_tokens: int
) -> list[tuple[int, int, int]]:
    """Cut ``text[start:end]`` (a sentence, stripped) into pieces of at most ``max_tokens``.

    Pieces end at token boundaries, between words when a word boundary lies within the
    budget; each piece is counted again on its own text and cut shorter until it fits (a cut
    inside a word can tokenize differently alone). Characters that give no token (U+200E, say)
    stay in the piece before the cut, and the whitespace at a cut belongs to no piece, so every
    non-whitespace character of the sentence lies in exactly one piece.

    Parameters
    ----------
    tokenizer : tokenizers.Tokenizer
        Without truncation or padding.
    text : str
        The parent text.
    start, end : int
        Character offsets of the sentence, ``text[start]`` and ``text[end - 1]`` not
        whitespace.
    max_tokens : int
        Most tokens per piece, >= 1.

    Returns
    -------
    list of (int, int, int)
        ``(piece_start, piece_end, num_tokens)`` in text order, covering the sentence. A piece
        exceeds ``max_tokens`` only when it is one character that alone gives more tokens (a
        Hangul syllable is three jamo: possible for a budget of 1 or 2).
    """
    encoding = tokenizer.encode(text[start:end], add_special_tokens=False)
    offsets, words = encoding.offsets, encoding.word_ids
    pieces = []
    piece_start, p = start, 0
    while p < len(offsets):
        q = _cut(offsets, words, p, p + max_tokens)
        while True:
            piece_end = start + offsets[q][0] if q < len(offsets) else end
            while piece_end - 1 > piece_start and text[piece_end - 1].isspace():
                piece_end -= 1
            num_tokens = count_tokens(tokenizer, text[piece_start:piece_end])
            shorter = _cut(offsets, words, p, q - 1)
            if num_tokens <= max_tokens or shorter >= q:
                break
            q = shorter
        pieces.append((piece_start, piece_end, num_tokens))
        if q < len(offsets):
            piece_start = start + offsets[q][0]
            while text[piece_start].isspace():  # a token that starts with its space (BPE)
                piece_start += 1
        p = q
    return pieces
