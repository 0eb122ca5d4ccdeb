"""Corpus input: documents as text plus their ids."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeAlias, Union

import numpy as np

from hybrid_engine.errors import IndexFormatError
from hybrid_engine.ids import check_id
from hybrid_engine.packed import PackedStrings, StringSequence

ENCODE_CHUNK = 16_384
"""Documents handed to an encoder per call when an index encodes a corpus: enough for it to sort
texts by length and pad little, few enough to bound memory."""

_PREFIX = "doc_id"  # saved as doc_id_bytes, doc_id_offsets

Document: TypeAlias = Union[str, Mapping[str, Any]]  # noqa: UP007 (runtime alias on 3.10)
"""A document: plain text, or a mapping with ``"text"`` and optional ``"title"`` and ``"_id"``."""


def document_text(
    doc: Document, position: int, *, name: str | None = None
) -> tuple[str, str | None]:
    """Indexed text (``title + " " + text`` when a title is given) and ``_id`` of one document.

    The ``_id`` follows the one rule of ``ids.check_id``: a ``str`` as it is, an ``int`` as
    its decimal string.

    Parameters
    ----------
    doc : str or mapping
        The document.
    position : int
        Its 0-based position, which messages name (``"document 3"``) unless ``name`` is given.
    name : str, optional
        How messages name the document instead (e.g. ``"document 'e1' (number 4 given)"``).

    Raises
    ------
    TypeError
        ``doc`` is neither ``str`` nor a mapping, the text or title is not ``str``, or the
        ``_id`` is neither ``str`` nor ``int``.
    ValueError
        A mapping has no ``"text"`` (it may be ``""`` or None: a title alone is indexed), or
        an ``_id`` breaks the id rule (empty, too long,
        surrounding whitespace, a control character).
    """
    name = name or f"document {position}"
    if isinstance(doc, str):
        return doc, None
    if not isinstance(doc, Mapping):
        raise TypeError(
            f"{name} is {type(doc).__name__}; expected str or a dict with 'text' "
            "(and optional 'title', '_id')"
        )
    if "text" not in doc:
        raise ValueError(f"{name} has no 'text' field (keys: {sorted(doc)[:5]})")
    text, title, doc_id = doc["text"], doc.get("title"), doc.get("_id")
    text = "" if text is None else text
    for field, value in (("text", text), ("title", title)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} field {field!r} is {type(value).__name__}, expected str")
    if doc_id is not None:
        doc_id = check_id(doc_id, f"{name} field '_id'")
    if title:
        text = f"{title} {text}"
    return text, doc_id


def document_title(doc: Document) -> str:
    """The ``"title"`` of a document, ``""`` for plain text or a mapping without one.

    The prefix ``document_text`` puts before the text (with a space) when not empty.

    Raises
    ------
    TypeError
        The title is neither ``str`` nor None.
    """
    title = doc.get("title") if isinstance(doc, Mapping) else None
    if title is not None and not isinstance(title, str):
        raise TypeError(f"a document's 'title' is {type(title).__name__}, expected str")
    return title or ""


def iter_batches(
    corpus: Iterable[Document], batch_size: int
) -> Iterator[tuple[list[str], list[str | None]]]:
    """Yield ``(texts, ids)`` batches of at most ``batch_size`` documents, checking each."""
    if isinstance(corpus, (str, bytes, Mapping)):
        raise TypeError(
            f"corpus must be an iterable of documents, got a single {type(corpus).__name__}; "
            "wrap it in a list"
        )
    texts: list[str] = []
    ids: list[str | None] = []
    for position, doc in enumerate(corpus):
        text, doc_id = document_text(doc, position)
        texts.append(text)
        ids.append(doc_id)
        if len(texts) == batch_size:
            yield texts, ids
            texts, ids = [], []
    if texts:
        yield texts, ids


def check_saved_arrays(
    path: str | os.PathLike[str],
    arrays: Mapping[str, np.ndarray],
    expected: Mapping[str, type[np.generic]],
    ids: bool,
) -> None:
    """Raise IndexFormatError unless the ``arrays`` an index at ``path`` saved are exactly the
    ``expected`` ones (name to dtype), and those of its ``DocIds.arrays`` where ``ids``, each
    1-d of its dtype."""

    def fail(what: str) -> IndexFormatError:
        return IndexFormatError(f"{path}: {what}; the index is corrupt, rebuild it")

    expected = dict(expected)
    if ids:
        expected.update({f"{_PREFIX}_bytes": np.uint8, f"{_PREFIX}_offsets": np.int64})
    if set(arrays) != set(expected):
        raise fail(f"expected arrays {sorted(expected)}, found {sorted(arrays)}")
    for name, dtype in expected.items():
        if arrays[name].dtype != dtype or arrays[name].ndim != 1:
            raise fail(f"{name} is {arrays[name].dtype} with {arrays[name].ndim} dims")


class DocIds(StringSequence):
    """The corpus ``_id`` of every position, packed (``PackedStrings``).

    When the corpus gave no ids, ``ids[i]`` is ``str(i)`` and nothing is stored.
    """

    NOUN = "documents"

    def __init__(self, n_docs: int, packed: PackedStrings | None = None) -> None:
        self._n = n_docs
        self._packed = packed

    @classmethod
    def from_list(cls, ids: Sequence[str | None]) -> DocIds:
        """Ids from the corpus; all ``None`` means positions. Raises on a mix or duplicates."""
        given = [i for i in ids if i is not None]
        if not given:
            return cls(len(ids))
        if len(given) != len(ids):
            missing = next(p for p, i in enumerate(ids) if i is None)
            raise ValueError(
                f"document {missing} has no '_id' while others do; give every document an "
                "'_id' or none"
            )
        if len(set(given)) != len(given):
            seen: set[str] = set()
            duplicate = next(i for i in given if i in seen or seen.add(i))  # type: ignore[func-returns-value]
            raise ValueError(f"duplicate document '_id' {duplicate!r}; ids must be unique")
        return cls(len(ids), PackedStrings.from_strings(given))

    @classmethod
    def from_saved(
        cls,
        path: str | os.PathLike[str],
        mode: object,
        arrays: Mapping[str, np.ndarray],
        n_docs: int,
    ) -> DocIds:
        """The ids the index at ``path`` saved: ``mode`` is its manifest's ``"doc_ids"`` entry
        (``DocIds.mode``), ``arrays`` its arrays (those of ``arrays()`` among them when
        explicit).

        Raises
        ------
        IndexFormatError
            ``mode`` is neither ``"explicit"`` nor ``"positions"``, disagrees with the arrays
            present, or the id arrays do not hold ``n_docs`` ids.
        """
        try:
            if mode not in ("explicit", "positions"):
                raise ValueError(f"doc_ids is {mode!r}, not 'explicit' or 'positions'")
            explicit = mode == "explicit"
            if explicit != (f"{_PREFIX}_bytes" in arrays):
                state = "absent" if explicit else "present"
                raise ValueError(f"doc_ids is {mode!r} but the id arrays are {state}")
            if not explicit:
                return cls(n_docs)
            return cls(n_docs, PackedStrings.from_arrays(arrays, n_docs, _PREFIX))
        except ValueError as exc:
            raise IndexFormatError(
                f"{path}: bad manifest entry ({exc}); rebuild the index"
            ) from None

    def append(self, ids: Sequence[str | None]) -> DocIds:
        """These ids followed by the ids of new documents, as a new ``DocIds``.

        Raises
        ------
        ValueError
            The new ids mix given and missing ``_id``s, repeat one (among themselves or from
            these ids), or do not follow these ids' mode: every new document needs an ``_id``
            when these have them, and none may have one when these ids are positions.
        """
        if not ids:
            return self
        new = DocIds.from_list(ids)
        if new.explicit != self.explicit:
            raise ValueError(
                "the indexed documents have '_id's; give every new document an '_id' too"
                if self.explicit
                else "the indexed documents have no '_id' (their ids are positions); add "
                "documents without '_id'"
            )
        if self._packed is None or new._packed is None:
            return DocIds(self._n + new._n)
        existing = set(self)
        duplicate = next((i for i in ids if i in existing), None)
        if duplicate is not None:
            raise ValueError(
                f"duplicate document '_id' {duplicate!r}: the index already holds it; ids must "
                "be unique"
            )
        return DocIds(self._n + new._n, self._packed.concat(new._packed))

    @property
    def explicit(self) -> bool:
        """Whether the corpus gave ids (otherwise ids are positions)."""
        return self._packed is not None

    @property
    def mode(self) -> str:
        """``"explicit"`` or ``"positions"``: the manifest entry ``from_saved`` reads."""
        return "explicit" if self.explicit else "positions"

    def arrays(self) -> dict[str, np.ndarray]:
        """Arrays to save (``doc_id_bytes``, ``doc_id_offsets``; none when ids are positions)."""
        return {} if self._packed is None else self._packed.arrays(_PREFIX)

    def __len__(self) -> int:
        return self._n

    def _at(self, index: int) -> str:
        return str(index) if self._packed is None else self._packed[index]


class IndexedDocuments:
    """The documents of an index by result position: its ``doc_ids`` (``self._doc_ids``) and
    their count."""

    _doc_ids: DocIds

    @property
    def doc_ids(self) -> DocIds:
        """``doc_ids[position]``: the corpus ``_id`` of a result position."""
        return self._doc_ids

    @property
    def num_documents(self) -> int:
        return len(self._doc_ids)
