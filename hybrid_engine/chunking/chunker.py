"""The chunker: texts and documents to chunks of whole sentences under the bi-encoder's token
budget, with character offsets into the parent text."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from tokenizers import Tokenizer

from hybrid_engine.checks import check_int
from hybrid_engine.chunking.chunk import Chunk
from hybrid_engine.chunking.packing import Unit, pack
from hybrid_engine.chunking.sentences import sentence_spans
from hybrid_engine.chunking.tokens import count_each, count_tokens, split_long
from hybrid_engine.corpus import DocIds, Document, document_text
from hybrid_engine.models.session import load_tokenizer
from hybrid_engine.models.store import BI_ENCODER, read_model

DEFAULT_MAX_TOKENS = 200
"""Tokens per chunk, special tokens not counted. all-MiniLM-L6-v2 reads 256 tokens with
[CLS] and [SEP]; 200 leaves 54 for those two and a title put before each chunk (SciFact's
titles: docs/chunking.md)."""
DEFAULT_OVERLAP_TOKENS = 40
"""Most tokens of whole sentences repeated from one chunk at the start of the next: about one
sentence of a scientific abstract (SciFact's median sentence has 33 tokens)."""


class Chunker:
    """Cuts texts into chunks of whole sentences of at most ``max_tokens`` tokens.

    Sentences come from ``sentences.sentence_spans`` (sentencex) and are packed greedily in
    order; a sentence over the budget is cut at token boundaries, between words where it can.
    The last whole sentences of a chunk, up to ``overlap_tokens`` tokens, start the next chunk
    too. Offsets are exact: ``text[chunk.start:chunk.end] == chunk.text``.

    Parameters
    ----------
    tokenizer : tokenizers.Tokenizer
        The tokenizer that counts tokens, normally the bi-encoder's (``Chunker.load``). The
        chunker counts on its own copy, without truncation or padding; a truncation length set
        on ``tokenizer`` (the prepared model's window) bounds ``max_tokens``.
    max_tokens : int
        Most tokens per chunk, special tokens not counted, >= 1.
    overlap_tokens : int
        Most tokens of whole sentences repeated at the start of the next chunk, in
        ``[0, max_tokens)``; 0 for no overlap.

    Raises
    ------
    TypeError
        ``tokenizer`` is not a ``tokenizers.Tokenizer``.
    ValueError
        ``max_tokens < 1``, ``overlap_tokens`` outside ``[0, max_tokens)``, or ``max_tokens``
        plus the special tokens exceeds the tokenizer's truncation length.

    Notes
    -----
    Thread-safe: a chunker holds no state that chunking changes.
    """

    def __init__(
        self,
        tokenizer: Tokenizer,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
    ) -> None:
        if not isinstance(tokenizer, Tokenizer):
            raise TypeError(
                f"tokenizer must be a tokenizers.Tokenizer, got {type(tokenizer).__name__}; "
                "use Chunker.load() for the prepared bi-encoder's"
            )
        self._max_tokens = check_int("max_tokens", max_tokens, 1)
        self._overlap_tokens = check_int("overlap_tokens", overlap_tokens, 0)
        if self._overlap_tokens >= self._max_tokens:
            raise ValueError(
                f"overlap_tokens ({overlap_tokens}) must be below max_tokens ({max_tokens}): "
                "each chunk must hold more than the overlap it repeats"
            )
        window = (tokenizer.truncation or {}).get("max_length")
        specials = tokenizer.num_special_tokens_to_add(False)
        if window is not None and self._max_tokens + specials > window:
            raise ValueError(
                f"max_tokens={max_tokens} plus {specials} special tokens exceeds the "
                f"tokenizer's window of {window} tokens, so the model would truncate chunks; "
                f"give max_tokens <= {window - specials}"
            )
        self._tokenizer = Tokenizer.from_str(tokenizer.to_str())
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    @classmethod
    def load(
        cls,
        model: str | os.PathLike[str] | None = None,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
    ) -> Chunker:
        """A chunker counting in a prepared bi-encoder's tokenizer.

        Parameters
        ----------
        model : path-like, optional
            The prepared bi-encoder folder, or the name of one in ``store.models_dir()``; the
            default model (all-MiniLM-L6-v2) when None.
        max_tokens, overlap_tokens : int
            As for ``Chunker``; ``max_tokens`` plus the special tokens must fit the model's
            ``max_length``.

        Raises
        ------
        ModelNotFoundError
            No prepared model there (the message names the command that prepares it).
        IndexFormatError
            The folder is corrupt or holds another kind of model.
        """
        info = read_model(model, kind=BI_ENCODER)
        return cls(load_tokenizer(info), max_tokens=max_tokens, overlap_tokens=overlap_tokens)

    @property
    def max_tokens(self) -> int:
        """Most tokens per chunk, special tokens not counted."""
        return self._max_tokens

    @property
    def overlap_tokens(self) -> int:
        """Most tokens of whole sentences repeated at the start of the next chunk."""
        return self._overlap_tokens

    def __repr__(self) -> str:
        return f"Chunker(max_tokens={self._max_tokens}, overlap_tokens={self._overlap_tokens})"

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the chunker's tokenizer, special tokens not counted (the count
        ``Chunk.num_tokens`` reports).

        Raises
        ------
        TypeError
            ``text`` is not a ``str``.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return count_tokens(self._tokenizer, text)

    def chunk(self, text: str, parent_id: str) -> list[Chunk]:
        """The chunks of one text.

        Parameters
        ----------
        text : str
            The parent text.
        parent_id : str
            Recorded in every chunk.

        Returns
        -------
        list of Chunk
            In text order, ``position`` 0, 1, ...; none for an empty or blank text; exactly
            one, the whole text stripped of surrounding whitespace, when that fits the budget.
            Every non-whitespace character of ``text`` lies in some chunk. ``num_tokens`` is at
            most ``max_tokens``, except for a chunk of one character that alone gives more
            tokens (a Hangul syllable is three, so only under a budget of 1 or 2).

        Raises
        ------
        TypeError
            ``text`` or ``parent_id`` is not a ``str``.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if not isinstance(parent_id, str):
            raise TypeError(f"parent_id must be a str, got {type(parent_id).__name__}")
        start, end = len(text) - len(text.lstrip()), len(text.rstrip())
        if start >= end:
            return []
        whole = count_tokens(self._tokenizer, text[start:end])
        if whole <= self._max_tokens:
            spans = [(start, end, whole)]
        else:
            spans = pack(
                self._units(text),
                lambda a, b: count_tokens(self._tokenizer, text[a:b]),
                self._max_tokens,
                self._overlap_tokens,
            )
        return [
            Chunk(parent_id, position, a, b, text[a:b], num_tokens)
            for position, (a, b, num_tokens) in enumerate(spans)
        ]

    def chunk_documents(self, docs: Iterable[Document]) -> list[Chunk]:
        """The chunks of every document, document after document.

        Only a document's ``text`` is chunked: offsets index ``doc["text"]`` (the str itself
        for a plain-text document). The title is in no chunk; an encoder that wants it puts
        ``corpus.document_title(doc)`` before each chunk's text, as ``corpus.document_text``
        does for a whole document, and the default budget leaves room for a title.

        Parameters
        ----------
        docs : iterable of str or mapping
            Documents as the engine takes them: plain text, or a mapping with ``"text"`` and
            optional ``"title"`` and ``"_id"``.

        Returns
        -------
        list of Chunk
            ``parent_id`` is the document's ``_id``, or its position as ``str`` when the
            documents have none. A blank document gives no chunk.

        Raises
        ------
        TypeError
            ``docs`` is a single document, or a document or one of its fields has the wrong
            type.
        ValueError
            A mapping without ``"text"``; some documents with ``_id`` and others without; a
            repeated ``_id``.
        """
        if isinstance(docs, (str, bytes, Mapping)):
            raise TypeError(
                f"docs must be an iterable of documents, got a single {type(docs).__name__}; "
                "wrap it in a list"
            )
        texts, ids = [], []
        for position, doc in enumerate(docs):
            _, doc_id = document_text(doc, position)  # checks the document's fields
            texts.append(doc if isinstance(doc, str) else doc["text"])
            ids.append(doc_id)
        parents = DocIds.from_list(ids)
        pairs = zip(texts, parents, strict=True)
        return [chunk for text, parent in pairs for chunk in self.chunk(text, parent)]

    def _units(self, text: str) -> list[Unit]:
        """The sentences of ``text``, those over the budget cut into pieces."""
        spans = sentence_spans(text)
        counts = count_each(self._tokenizer, [text[a:b] for a, b in spans])
        units = []
        for (a, b), num_tokens in zip(spans, counts, strict=True):
            if num_tokens <= self._max_tokens:
                units.append(Unit(a, b, num_tokens, whole=True))
            else:
                pieces = split_long(self._tokenizer, text, a, b, self._max_tokens)
                units.extend(Unit(pa, pb, n, whole=False) for pa, pb, n in pieces)
        return units
