"""One chunk of a parent document: its place in the parent and its text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    """A stretch of whole sentences (or a piece of one over-long sentence) of a parent text.

    Attributes
    ----------
    parent_id : str
        The parent document's id (its ``_id``, or its position as ``str`` for documents
        without one).
    position : int
        0-based number of the chunk in its parent; chunks of a parent are numbered in text
        order.
    start, end : int
        Character offsets (Python ``str`` indices, not bytes) into the parent's text:
        ``parent_text[start:end] == text``. Consecutive chunks of a parent may overlap (the
        sentences repeated as overlap); ``start`` increases with ``position``.
    text : str
        The chunk's text, never starting or ending with whitespace.
    num_tokens : int
        Tokens of ``text`` in the chunker's tokenizer, special tokens ([CLS], [SEP]) not
        counted.
    """

    parent_id: str
    position: int
    start: int
    end: int
    text: str
    num_tokens: int
