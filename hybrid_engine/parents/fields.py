"""The chunk documents a parent document becomes in the inner engine, and the reserved
metadata fields that tie each chunk to its parent.

A parent ``{"_id", "title", "text", "metadata"}`` becomes one live document per chunk, id
``f"{parent_id}#{position}"``, with the parent's title, the chunk's text and the parent's
metadata plus the reserved fields below. Chunk 0 also carries the parent's full text when it
differs from chunk 0's own (a text of several chunks, or one with whitespace around it), so
the inner engine's commit stores every parent whole: no side file can drift from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hybrid_engine.chunking import Chunk, Chunker
from hybrid_engine.corpus import DocIds, Document, document_text, document_title
from hybrid_engine.errors import DuplicateIdError
from hybrid_engine.live.documents import check_indexable, document_metadata
from hybrid_engine.result import Hit

RESERVED_PREFIX = "_chunk."
"""Metadata field names starting with this are the index's own; user metadata may not use
them."""
PARENT = RESERVED_PREFIX + "parent"
"""The parent's id (str)."""
POSITION = RESERVED_PREFIX + "position"
"""The chunk's 0-based position in its parent (int)."""
START = RESERVED_PREFIX + "start"
"""The chunk's first character offset into the parent text (int)."""
END = RESERVED_PREFIX + "end"
"""The chunk's end character offset into the parent text (int)."""
PARENT_TEXT = RESERVED_PREFIX + "parent_text"
"""On chunk 0 only, when it differs from chunk 0's text: the parent's full text (str)."""


def chunk_id(parent_id: str, position: int) -> str:
    """The inner engine's id of a parent's chunk."""
    return f"{parent_id}#{position}"


@dataclass(frozen=True)
class Parent:
    """One parent document as given: id, title, text and user metadata."""

    id: str
    title: str
    text: str
    metadata: dict[str, Any]


def read_parents(docs: Iterable[Document], *, ids_required: bool) -> list[Parent]:
    """The parents of ``docs``, checked.

    Documents without ``_id`` get their position as id (all or none must have one), unless
    ``ids_required``.

    Raises
    ------
    TypeError
        ``docs`` is a single document, or a document or field has the wrong type.
    ValueError
        A document without ``text``, with neither title nor text, a missing or bad ``_id``
        (``ids.check_id``; an ``int`` is taken as its decimal string) where one is required,
        mixed ids, a user metadata field with the reserved prefix.
    DuplicateIdError
        An id given twice.
    """
    if isinstance(docs, (str, bytes, Mapping)):
        raise TypeError(
            f"docs must be an iterable of documents, got a single {type(docs).__name__}; "
            "wrap it in a list"
        )
    docs = list(docs)
    ids = []
    for position, doc in enumerate(docs):
        text, doc_id = document_text(doc, position)
        check_indexable(text, doc_id, position)
        ids.append(doc_id)
    if ids_required and None in ids:
        missing = ids.index(None)
        raise ValueError(
            f"document {missing} has no '_id'; parents are added, replaced and deleted by id, "
            "so give each document an '_id'"
        )
    seen: set[str] = set()
    for doc_id in ids:
        if doc_id in seen:
            raise DuplicateIdError(f"document id {doc_id!r} is given twice; ids must be unique")
        if doc_id is not None:
            seen.add(doc_id)
    parents = []
    for position, (doc, doc_id) in enumerate(zip(docs, DocIds.from_list(ids), strict=True)):
        metadata = document_metadata(doc, position) or {}
        reserved = sorted(name for name in metadata if name.startswith(RESERVED_PREFIX))
        if reserved:
            raise ValueError(
                f"document {position} ({doc_id!r}) has metadata field {reserved[0]!r}: names "
                f"starting with {RESERVED_PREFIX!r} are reserved for the parent-document "
                "index's own bookkeeping; rename the field"
            )
        text = doc if isinstance(doc, str) else doc["text"] or ""
        parents.append(Parent(doc_id, document_title(doc), text, metadata))
    return parents


def chunk_documents(parent: Parent, chunker: Chunker) -> list[dict[str, Any]]:
    """The live documents of ``parent``'s chunks, in position order.

    A blank text gives no chunk in the chunker; its parent (which has a title:
    ``read_parents`` refuses one with neither) becomes one chunk of the whole text, indexed
    by its title.
    """
    chunks = chunker.chunk(parent.text, parent.id)
    if not chunks:
        chunks = [
            Chunk(parent.id, 0, 0, len(parent.text), parent.text, chunker.count_tokens(parent.text))
        ]
    documents = []
    for chunk in chunks:
        metadata = {
            **parent.metadata,
            PARENT: parent.id,
            POSITION: chunk.position,
            START: chunk.start,
            END: chunk.end,
        }
        if chunk.position == 0 and chunk.text != parent.text:
            metadata[PARENT_TEXT] = parent.text
        documents.append(
            {
                "_id": chunk_id(parent.id, chunk.position),
                "title": parent.title,
                "text": chunk.text,
                "metadata": metadata,
            }
        )
    return documents


def user_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A chunk's metadata without the reserved fields: its parent's metadata."""
    return {name: value for name, value in metadata.items() if not name.startswith(RESERVED_PREFIX)}


def parent_hit(first: Hit, score: float) -> Hit:
    """The parent document of its chunk 0 ``first`` (a hit of the inner engine) as a hit of
    ``score``: the parent's id, title, full text (``PARENT_TEXT`` where chunk 0 carries it,
    else chunk 0's own text) and user metadata."""
    return Hit(
        first.metadata[PARENT],
        score,
        first.title,
        first.metadata.get(PARENT_TEXT, first.text),
        user_metadata(first.metadata),
    )
