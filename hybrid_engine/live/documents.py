"""The documents of a segment: external ids, indexed texts, titles and metadata, by position.

A document given to the live engine is a dict::

    {"_id": str, "title": str, "text": str, "metadata": {field: value, ...}}

(``title`` and ``metadata`` optional; a plain ``str`` is a text without id, title or
metadata). Every other top-level key of the dict is taken as a metadata field too, so a BEIR
corpus line's extra fields are filterable; a key given both ways is an error. Values are
those of ``metadata.MetadataColumns``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hybrid_engine.corpus import Document, document_text, document_title
from hybrid_engine.errors import DuplicateIdError
from hybrid_engine.ids import new_id
from hybrid_engine.metadata import MetadataColumns
from hybrid_engine.packed import PackedStrings

DOCUMENT_KEYS = ("_id", "title", "text", "metadata")
"""Top-level keys of a document that are not metadata fields."""


@dataclass(frozen=True)
class LiveDocuments:
    """Documents by position: ``ids`` (unique external ids), ``texts`` (the indexed text:
    title, a space and text, or the text alone), ``titles`` (``""`` where none) and
    ``metadata``."""

    ids: PackedStrings
    texts: PackedStrings
    titles: PackedStrings
    metadata: MetadataColumns

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_documents(cls, documents: Iterable[Document]) -> tuple[LiveDocuments, list[str]]:
        """The documents read from ``documents``, and their ids in order.

        A document without ``_id`` gets a new random one (``ids.new_id``), which never
        collides with an id a user chose.

        Raises
        ------
        TypeError, ValueError
            A malformed document or metadata value (the message names the position), or an
            id given twice (named).
        """
        ids: list[str] = []
        texts: list[str] = []
        titles: list[str] = []
        records: list[dict[str, Any] | None] = []
        seen: set[str] = set()
        for position, doc in enumerate(documents):
            text, doc_id = document_text(doc, position)
            doc_id = doc_id if doc_id is not None else new_id()
            if doc_id in seen:
                raise DuplicateIdError(f"document id {doc_id!r} is given twice; ids must be unique")
            seen.add(doc_id)
            ids.append(doc_id)
            texts.append(text)
            titles.append(document_title(doc))
            records.append(document_metadata(doc, position))
        docs = cls(
            PackedStrings.from_strings(ids),
            PackedStrings.from_strings(texts),
            PackedStrings.from_strings(titles),
            MetadataColumns.from_records(records),
        )
        return docs, ids

    def take(self, positions: np.ndarray) -> LiveDocuments:
        """The documents at ``positions`` (int64), in that order."""
        rows = [int(p) for p in positions]
        return LiveDocuments(
            PackedStrings.from_strings([self.ids[r] for r in rows]),
            PackedStrings.from_strings([self.texts[r] for r in rows]),
            PackedStrings.from_strings([self.titles[r] for r in rows]),
            self.metadata.take(np.asarray(positions, dtype=np.int64)),
        )

    @classmethod
    def concat(cls, parts: Sequence[LiveDocuments]) -> LiveDocuments:
        """The documents of ``parts`` one after another."""
        ids, texts, titles = parts[0].ids, parts[0].texts, parts[0].titles
        for part in parts[1:]:
            ids, texts, titles = (
                ids.concat(part.ids),
                texts.concat(part.texts),
                titles.concat(part.titles),
            )
        return cls(ids, texts, titles, MetadataColumns.concat([p.metadata for p in parts]))

    def text(self, position: int) -> str:
        """The document's text without its title."""
        title, text = self.titles[position], self.texts[position]
        return text[len(title) + 1 :] if title else text

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
        cls, arrays: Mapping[str, np.ndarray], description: Mapping[str, Any], count: int
    ) -> LiveDocuments:
        """The documents ``to_arrays`` saved; ValueError when the arrays do not hold ``count``
        documents."""
        return cls(
            PackedStrings.from_arrays(arrays, count, "id"),
            PackedStrings.from_arrays(arrays, count, "text"),
            PackedStrings.from_arrays(arrays, count, "title"),
            MetadataColumns.from_arrays(dict(arrays), description["metadata"], count),
        )


def document_metadata(doc: Document, position: int) -> dict[str, Any] | None:
    """The metadata fields of one document: its ``"metadata"`` dict and its other top-level
    keys (``DOCUMENT_KEYS`` aside); None when it has none.

    Raises
    ------
    TypeError
        ``"metadata"`` is not a dict.
    ValueError
        A field given both in ``"metadata"`` and at the top level.
    """
    if not isinstance(doc, Mapping):
        return None
    nested = doc.get("metadata")
    if nested is not None and not isinstance(nested, Mapping):
        raise TypeError(
            f"document {position} has 'metadata' of type {type(nested).__name__}; give a dict "
            "of field to value"
        )
    fields = dict(nested or {})
    for key, value in doc.items():
        if key in DOCUMENT_KEYS:
            continue
        if key in fields:
            raise ValueError(
                f"document {position} gives metadata field {key!r} both at the top level and "
                "in 'metadata'; keep one"
            )
        fields[key] = value
    return fields or None
