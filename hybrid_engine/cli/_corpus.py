"""How ``index`` and ``add`` read a corpus: the documents of a JSONL file (or of standard
input) with their lines; a document with neither title nor text refused, or left out with
``--skip-empty``; an engine error about the n-th document told by its line and ``_id``."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from hybrid_engine.cli._live import STDIN
from hybrid_engine.errors import HybridEngineError
from hybrid_engine.evaluation.datasets import (
    DatasetError,
    load_numbered_corpus,
    read_numbered_corpus,
)

SHOWN_IDS = 5
"""Ids of skipped documents a message names, at most."""
_DOCUMENT = re.compile(r"\bdocument (?:.*? \(number (\d+) of those given\)|number (\d+)\b)")


@dataclass(frozen=True)
class CorpusFile:
    """The documents read from one file, in file order.

    Attributes
    ----------
    source : str
        The file read (a folder's ``corpus.jsonl[.gz]``), or ``<stdin>``.
    documents : list of dict
        The documents to index, as ``load_corpus`` reads them (the empty ones left out).
    lines : list of int
        The 1-based line of each of ``documents``.
    skipped : list of str
        The ids of the documents with neither title nor text that ``--skip-empty`` left out.
    """

    source: str
    documents: list[dict[str, Any]]
    lines: list[int]
    skipped: list[str]

    def skipped_note(self) -> str:
        """``" (skipped 2 with neither title nor text: '471', '995')"``, or ``""``."""
        if not self.skipped:
            return ""
        shown = ", ".join(repr(doc_id) for doc_id in self.skipped[:SHOWN_IDS])
        more = ", ..." if len(self.skipped) > SHOWN_IDS else ""
        return f" (skipped {len(self.skipped)} with neither title nor text: {shown}{more})"

    @contextmanager
    def lines_named(self) -> Iterator[None]:
        """Within the block, an engine error about the documents (a ``TypeError`` or
        ``ValueError`` that is not a ``HybridEngineError``) naming a document
        (``live.documents.document_name``: ``document 'X' (number N of those given)`` or
        ``document number N``, N 1-based in ``documents``) is raised as a ``DatasetError`` of
        this file that tells it as ``line L (_id 'X')``; other errors pass as they are."""
        try:
            yield
        except HybridEngineError:
            raise
        except (TypeError, ValueError) as exc:
            if _DOCUMENT.search(str(exc)) is None:
                raise

            def told(match: re.Match[str]) -> str:
                position = int(match.group(1) or match.group(2)) - 1
                if position >= len(self.documents):
                    return match.group(0)
                doc_id = self.documents[position]["_id"]
                return f"line {self.lines[position]} (_id {doc_id!r})"

            raise DatasetError(f"{self.source}: {_DOCUMENT.sub(told, str(exc))}") from None


def read_documents(path: str, *, skip_empty: bool) -> CorpusFile:
    """The documents of the corpus at ``path`` (a JSONL file, its folder, or ``-`` for
    standard input).

    Raises
    ------
    DatasetError
        What ``load_corpus`` raises; a document with neither title nor text (only blanks),
        unless ``skip_empty``: the message names the file, the line, the ``_id``, how many
        there are and ``--skip-empty``.
    """
    if path == STDIN:
        source = "<stdin>"
        numbered = read_numbered_corpus(getattr(sys.stdin, "buffer", sys.stdin), source)
    else:
        file, numbered = load_numbered_corpus(path)
        source = str(file)
    kept = [(line, doc) for line, doc in numbered if _has_words(doc)]
    empty = [(line, doc["_id"]) for line, doc in numbered if not _has_words(doc)]
    if empty and not skip_empty:
        line, doc_id = empty[0]
        others = f" (and {len(empty) - 1} more such)" if len(empty) > 1 else ""
        raise DatasetError(
            f"{source}:{line}: document {doc_id!r} has neither title nor text{others}, so "
            "there is nothing to index; give it some, or pass --skip-empty to leave such "
            "documents out"
        )
    return CorpusFile(
        source,
        [doc for _, doc in kept],
        [line for line, _ in kept],
        [doc_id for _, doc_id in empty],
    )


def _has_words(doc: dict[str, Any]) -> bool:
    """Whether the document's title or text holds more than whitespace."""
    return bool(doc["title"].strip() or doc["text"].strip())
