"""The documents of a segment: external ids, indexed texts, titles and metadata, by position.

A document given to the live engine is a dict::

    {"_id": str, "title": str, "text": str, "metadata": {field: value, ...}}

(``title`` and ``metadata`` optional; a plain ``str`` is a text without id, title or
metadata). Every other top-level key of the dict is taken as a metadata field too, so a BEIR
corpus line's extra fields are filterable; a key given both ways is an error. Values are
those of ``metadata.MetadataColumns``. ``_id`` follows ``ids.check_id``; a document needs a
title or a text.

Every document is checked when it is read (``LiveDocuments.from_documents``), before anything
is staged or built, so that a commit never meets a document it cannot index; errors name the
document by its ``_id`` and its 1-based number (``document_name``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.compressed import CompressedStrings
from hybrid_engine.corpus import Document, document_text, document_title
from hybrid_engine.errors import DuplicateIdError
from hybrid_engine.ids import id_problem, new_id
from hybrid_engine.metadata import MetadataColumns
from hybrid_engine.packed import PackedStrings

DOCUMENT_KEYS = ("_id", "title", "text", "metadata")
"""Top-level keys of a document that are not metadata fields."""


@dataclass(frozen=True)
class LiveDocuments:
    """Documents by position: ``ids`` (unique external ids), ``texts`` (the indexed text:
    title, a space and text, or the text alone), ``titles`` (``""`` where none) and
    ``metadata``.

    Texts and titles are packed while documents are staged (``from_documents``, ``take``,
    ``concat``) and compressed in a segment (``compressed``; a segment of format version 1
    keeps them packed).
    """

    ids: PackedStrings
    texts: PackedStrings | CompressedStrings
    titles: PackedStrings | CompressedStrings
    metadata: MetadataColumns

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_documents(
        cls, documents: Iterable[Document], *, positions: bool = False
    ) -> tuple[LiveDocuments, list[str]]:
        """The documents read from ``documents``, every one checked, and their ids in order.

        What a commit would refuse is refused here, so that staging a document (``add``,
        ``upsert``) fails at once rather than every later commit: a document with neither
        title nor text, a title or text that is not valid Unicode, a bad id or metadata
        value. Messages name the document by its ``_id`` and its 1-based number among
        ``documents``. A document without ``_id`` gets a new random one (``ids.new_id``),
        which never collides with an id a user chose; with ``positions``, its 0-based
        position instead (as legs built apart name such documents, ``DocIds``).

        Raises
        ------
        TypeError, ValueError
            A malformed document, id or metadata value, or a document with nothing to index
            (the message names it), or an id given twice (named).
        """
        if isinstance(documents, (str, bytes, Mapping)):
            raise TypeError(
                f"documents must be an iterable of documents, got a single "
                f"{type(documents).__name__}; wrap it in a list"
            )
        ids: list[str] = []
        given: list[str | None] = []  # the ids as given, None where none
        texts: list[str] = []
        titles: list[str] = []
        records: list[dict[str, Any] | None] = []
        seen: set[str] = set()
        for position, doc in enumerate(documents):
            name = document_name(_given_id(doc), position)
            text, doc_id = document_text(doc, position, name=name)
            check_indexable(text, doc_id, position)
            given.append(doc_id)
            if doc_id is None:
                doc_id = str(position) if positions else new_id()
            if doc_id in seen:
                raise DuplicateIdError(f"document id {doc_id!r} is given twice; ids must be unique")
            seen.add(doc_id)
            ids.append(doc_id)
            texts.append(text)
            titles.append(document_title(doc))
            records.append(document_metadata(doc, position, name=name))
        metadata = _metadata_columns(records, given)
        docs = cls(
            PackedStrings.from_strings(ids),
            PackedStrings.from_strings(texts),
            PackedStrings.from_strings(titles),
            metadata,
        )
        return docs, ids

    def take(self, positions: np.ndarray) -> LiveDocuments:
        """The documents at ``positions`` (int64), in that order, their texts packed."""
        rows = np.asarray(positions, dtype=np.int64)
        return LiveDocuments(
            PackedStrings.from_strings(self.ids.take(rows)),
            PackedStrings.from_strings(self.texts.take(rows)),
            PackedStrings.from_strings(self.titles.take(rows)),
            self.metadata.take(rows),
        )

    @classmethod
    def concat(cls, parts: Sequence[LiveDocuments]) -> LiveDocuments:
        """The documents of ``parts`` one after another, their texts packed."""
        ids, texts, titles = parts[0].ids, packed(parts[0].texts), packed(parts[0].titles)
        for part in parts[1:]:
            ids, texts, titles = (
                ids.concat(part.ids),
                texts.concat(packed(part.texts)),
                titles.concat(packed(part.titles)),
            )
        return cls(ids, texts, titles, MetadataColumns.concat([p.metadata for p in parts]))

    def compressed(self) -> LiveDocuments:
        """These documents with their texts and titles compressed (``CompressedStrings``), as
        a segment keeps them."""
        texts, titles = self.texts, self.titles
        if isinstance(texts, PackedStrings):
            texts = CompressedStrings.from_strings(texts)
        if isinstance(titles, PackedStrings):
            titles = CompressedStrings.from_strings(titles)
        return replace(self, texts=texts, titles=titles)

    def text(self, position: int) -> str:
        """The document's text without its title."""
        return without_title(self.texts[position], self.titles[position])

    def to_arrays(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The arrays to save and the JSON description ``from_arrays`` needs."""
        meta_arrays, meta_description = self.metadata.to_arrays()
        arrays = {
            **self.ids.arrays("id"),
            **self.texts.arrays("text"),
            **self.titles.arrays("title"),
            **meta_arrays,
        }
        return arrays, {"metadata": meta_description}

    @classmethod
    def from_arrays(
        cls,
        arrays: Mapping[str, np.ndarray],
        description: Mapping[str, Any],
        count: int,
        *,
        shown: Path,
    ) -> LiveDocuments:
        """The documents ``to_arrays`` saved in directory ``shown`` (which messages name),
        texts and titles compressed or packed (as format version 1 saved them); ValueError
        when the arrays do not hold ``count`` documents."""
        return cls(
            PackedStrings.from_arrays(arrays, count, "id"),
            _strings_from_arrays(arrays, count, "text", shown),
            _strings_from_arrays(arrays, count, "title", shown),
            MetadataColumns.from_arrays(dict(arrays), description["metadata"], count),
        )


def packed(strings: PackedStrings | CompressedStrings) -> PackedStrings:
    """``strings`` packed: as they are, or decompressed."""
    if isinstance(strings, PackedStrings):
        return strings
    return PackedStrings.from_strings(list(strings))


def _strings_from_arrays(
    arrays: Mapping[str, np.ndarray], count: int, prefix: str, shown: Path
) -> PackedStrings | CompressedStrings:
    """The ``count`` strings saved as ``arrays(prefix)``: compressed when a
    ``<prefix>_zframes`` array is there, packed otherwise."""
    if f"{prefix}_zframes" in arrays:
        return CompressedStrings.from_arrays(arrays, count, prefix, shown=shown)
    return PackedStrings.from_arrays(arrays, count, prefix)


def without_title(indexed: str, title: str) -> str:
    """A document's text from its indexed text (``corpus.document_text``: the title, a space
    and the text, or the text alone when it has no title)."""
    return indexed[len(title) + 1 :] if title else indexed


def document_name(doc_id: str | None, position: int) -> str:
    """How a message names document ``position`` (0-based) of those given: by its ``_id``
    and 1-based number, ``"document 'e1' (number 4 of those given)"``, or by the number
    alone when it has no (valid) ``_id``, ``"document number 4"``."""
    return "".join(_name_parts(doc_id, position))


def check_indexable(text: str, doc_id: str | None, position: int) -> None:
    """Refuse an indexed ``text`` (title and text) that a leg would refuse at commit: blank
    (nothing to index or embed), or not valid Unicode (a lone surrogate, which the analyzer
    and the tokenizers cannot read).

    Raises
    ------
    ValueError
        Naming the document as ``document_name`` does, e.g. ``"document '471' has no title
        and no text (number 472 of those given)"``, and the fix.
    """
    subject, number = _name_parts(doc_id, position)
    if not text.strip():
        raise ValueError(
            f"{subject} has no title and no text{number}; give it a title or a text, or leave "
            "it out"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(
            f"{subject} is not valid Unicode{number}: its title or text holds a lone "
            "surrogate; clean it first, e.g. text.encode('utf-8', 'replace').decode()"
        ) from None


def _name_parts(doc_id: str | None, position: int) -> tuple[str, str]:
    """``document_name`` as the subject of a message and the number that follows it."""
    if doc_id is None:
        return f"document number {position + 1}", ""
    return f"document {doc_id!r}", f" (number {position + 1} of those given)"


def document_metadata(
    doc: Document, position: int, *, name: str | None = None
) -> dict[str, Any] | None:
    """The metadata fields of one document: its ``"metadata"`` dict and its other top-level
    keys (``DOCUMENT_KEYS`` aside); None when it has none. Messages name the document
    ``"document <position>"``, or ``name`` when given (``document_name``).

    Raises
    ------
    TypeError
        ``"metadata"`` is not a dict.
    ValueError
        A field given both in ``"metadata"`` and at the top level.
    """
    if not isinstance(doc, Mapping):
        return None
    name = name or f"document {position}"
    nested = doc.get("metadata")
    if nested is not None and not isinstance(nested, Mapping):
        raise TypeError(
            f"{name} has 'metadata' of type {type(nested).__name__}; give a dict of field to value"
        )
    fields = dict(nested or {})
    for key, value in doc.items():
        if key in DOCUMENT_KEYS:
            continue
        if key in fields:
            raise ValueError(
                f"{name} gives metadata field {key!r} both at the top level and in 'metadata'; "
                "keep one"
            )
        fields[key] = value
    return fields or None


def _given_id(doc: Document) -> str | None:
    """The document's ``_id`` as messages show it, before it is checked: a valid id
    (``ids.id_problem``) as ``check_id`` reads it; else None, and a message names the
    document by its number."""
    doc_id = doc.get("_id") if isinstance(doc, Mapping) else None
    return None if id_problem(doc_id) is not None else str(doc_id)


_SINGLE_DOCUMENT = re.compile(r"^document 0[:,] ")
"""The name ``MetadataColumns.from_records`` gives the only document of a batch of one."""


def _metadata_columns(
    records: Sequence[dict[str, Any] | None], ids: Sequence[str | None]
) -> MetadataColumns:
    """The columns of ``records``; on a bad value, the error names the document by its
    given ``_id`` (``ids``, None where none was given) and number, and the field."""
    try:
        return MetadataColumns.from_records(records)
    except (TypeError, ValueError) as batch_error:
        for position, record in enumerate(records):
            try:
                MetadataColumns.from_records([record])
            except (TypeError, ValueError) as exc:
                detail = _SINGLE_DOCUMENT.sub("", str(exc))
                name = document_name(ids[position], position)
                raise type(exc)(f"{name}: {detail}") from None
        raise batch_error
