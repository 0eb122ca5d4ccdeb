"""The mutations of a live engine since its last commit: added documents and deletions.

Nothing here is visible to searches: ``commit`` turns the added documents into a new segment
and the deletions into new live masks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from hybrid_engine.corpus import Document
from hybrid_engine.errors import DuplicateIdError
from hybrid_engine.live.documents import LiveDocuments
from hybrid_engine.live.snapshot import Snapshot


@dataclass(frozen=True)
class StagedChanges:
    """What is staged and not committed: ``added``, documents to add (by ``add`` or
    ``upsert``), and ``deleted``, committed documents to delete (by ``delete``, or replaced by
    ``upsert``)."""

    added: int = 0
    deleted: int = 0

    def __bool__(self) -> bool:
        return bool(self.added or self.deleted)


class Pending:
    """Added documents (by id, in order) and deleted committed documents (by segment)."""

    def __init__(self) -> None:
        self.batches: list[LiveDocuments] = []
        self.added: dict[str, tuple[int, int]] = {}  # id -> (batch, row), live adds only
        self.deleted: dict[int, set[int]] = {}  # segment -> local rows

    def __bool__(self) -> bool:
        return bool(self.added) or bool(self.deleted)

    def counts(self) -> StagedChanges:
        """How many documents are staged to be added, and committed ones to be deleted."""
        return StagedChanges(len(self.added), sum(len(rows) for rows in self.deleted.values()))

    def is_live(self, snapshot: Snapshot, doc_id: str) -> bool:
        """Whether ``doc_id`` will be live after the commit (so far)."""
        if doc_id in self.added:
            return True
        where = snapshot.locations().get(doc_id)
        return where is not None and where[1] not in self.deleted.get(where[0], ())

    def add(self, snapshot: Snapshot, documents: Iterable[Document], replace: bool) -> list[str]:
        """Stage ``documents``; with ``replace`` an id already live is replaced (upsert),
        without it such an id is an error naming it. All or nothing. Returns their ids, in
        order (a new one for each document given without ``_id``)."""
        docs, ids = LiveDocuments.from_documents(documents)
        if not replace:
            taken = [doc_id for doc_id in ids if self.is_live(snapshot, doc_id)]
            if taken:
                raise DuplicateIdError(
                    f"{len(taken)} document id(s) already in the index, e.g. {taken[:5]}; use "
                    "upsert() to replace documents, or delete() them first"
                )
        for doc_id in ids:
            self.remove(snapshot, doc_id)
        batch = len(self.batches)
        self.batches.append(docs)
        for row, doc_id in enumerate(ids):
            self.added[doc_id] = (batch, row)
        return ids

    def remove(self, snapshot: Snapshot, doc_id: str) -> bool:
        """Delete ``doc_id`` (staged or committed) if it is live; whether it was."""
        if self.added.pop(doc_id, None) is not None:
            return True
        where = snapshot.locations().get(doc_id)
        if where is None or where[1] in self.deleted.get(where[0], ()):
            return False
        self.deleted.setdefault(where[0], set()).add(where[1])
        return True

    def documents(self) -> LiveDocuments | None:
        """The live staged documents, in the order they were added; None when none."""
        if not self.added:
            return None
        by_batch: dict[int, list[int]] = {}
        for batch, row in self.added.values():
            by_batch.setdefault(batch, []).append(row)
        parts = [
            self.batches[batch].take(np.sort(np.asarray(rows, dtype=np.int64)))
            for batch, rows in sorted(by_batch.items())
        ]
        return LiveDocuments.concat(parts)

    def live_masks(self, snapshot: Snapshot) -> Mapping[int, np.ndarray]:
        """The new live mask of every segment with staged deletions."""
        masks = {}
        for segment, rows in self.deleted.items():
            current = snapshot.live[segment]
            size = len(snapshot.segments[segment])
            mask = np.ones(size, bool) if current is None else current.copy()
            mask[np.fromiter(rows, dtype=np.int64)] = False
            masks[segment] = mask
        return masks
