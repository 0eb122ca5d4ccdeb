"""The life of a ``ParentDocumentIndex`` after it is built or loaded: staging parent
documents and deletions by parent id, committing, merging and rolling them back, saving and
giving up the directory, with the parent bookkeeping (chunks per parent, committed and staged)
kept in step with the inner ``HybridIndex``'s."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, TypeVar

from hybrid_engine.chunking import Chunker
from hybrid_engine.corpus import Document
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.errors import DuplicateIdError, UnknownIdError
from hybrid_engine.ids import check_ids
from hybrid_engine.live.pending import StagedChanges
from hybrid_engine.parents.fields import chunk_documents, chunk_id, read_parents

_Self = TypeVar("_Self", bound="ParentLifecycle")


class ParentLifecycle:
    """The methods of ``ParentDocumentIndex`` that change its inner engine by parent id, and
    the bookkeeping of how many chunks each parent has."""

    def __init__(self, engine: HybridIndex, chunker: Chunker, counts: dict[str, int]) -> None:
        """Use ``ParentDocumentIndex.build`` or ``load``; ``counts`` is the chunks of every
        committed parent."""
        self._engine = engine
        self._chunker = chunker
        self._committed = counts
        self._staged: dict[str, int] = {}  # parent -> chunks after the staged changes; 0: gone

    def add(self, documents: Iterable[Document]) -> list[str]:
        """Stage new parent documents (each needs an ``_id``: a ``str``, or an ``int`` taken
        as its decimal string); ``commit`` makes them searchable.

        Returns
        -------
        list of str
            The ids of the parents staged, in order.

        Raises
        ------
        DuplicateIdError
            A parent id already in the index or staged (use ``upsert``), or given twice.
            Nothing is staged on an error.
        ValueError, TypeError
            A document without ``_id`` or with a bad one (``ids.check_id``), one with
            neither title nor text, a bad document or metadata value.
        """
        parents = read_parents(documents, ids_required=True)
        for parent in parents:
            if self._chunks_of(parent.id):
                raise DuplicateIdError(
                    f"parent id {parent.id!r} is already in the index (or staged); use upsert "
                    "to replace it"
                )
        staged = {parent.id: chunk_documents(parent, self._chunker) for parent in parents}
        self._engine.add([doc for chunks in staged.values() for doc in chunks])
        self._staged.update({parent: len(chunks) for parent, chunks in staged.items()})
        return list(staged)

    def upsert(self, documents: Iterable[Document]) -> list[str]:
        """Stage parent documents, replacing every chunk of those already in the index (a
        parent whose new text has fewer chunks loses the others); as ``add`` otherwise.

        Returns
        -------
        list of str
            The ids of the parents staged, in order.
        """
        parents = read_parents(documents, ids_required=True)
        staged = {parent.id: chunk_documents(parent, self._chunker) for parent in parents}
        stale = [
            chunk_id(parent, position)
            for parent, chunks in staged.items()
            for position in range(len(chunks), self._chunks_of(parent))
        ]
        self._engine.upsert([doc for chunks in staged.values() for doc in chunks])
        self._engine.delete(stale)
        self._staged.update({parent: len(chunks) for parent, chunks in staged.items()})
        return list(staged)

    def delete(self, ids: Iterable[str | int], *, missing_ok: bool = False) -> int:
        """Stage the deletion of parent documents (all their chunks) by id.

        Returns
        -------
        int
            Parents deleted.

        Raises
        ------
        UnknownIdError
            A ``KeyError`` naming the first id that is neither in the index nor staged,
            unless ``missing_ok`` (then unknown ids are skipped). Nothing is staged on an
            error.
        TypeError, ValueError
            ``ids`` is a single id, or holds something that is no id (``ids.check_ids``: an
            ``int`` is its decimal string).
        """
        parents: dict[str, int] = {}
        for parent in check_ids(ids):
            count = self._chunks_of(parent)
            if count:
                parents[parent] = count
            elif not missing_ok:
                raise UnknownIdError(
                    f"parent id {parent!r} is not in the index (nor staged); pass "
                    "missing_ok=True to skip unknown ids"
                )
        chunks = [
            chunk_id(p, position) for p, count in parents.items() for position in range(count)
        ]
        self._engine.delete(chunks)
        self._staged.update(dict.fromkeys(parents, 0))
        return len(parents)

    def holds(self, ids: Iterable[str | int]) -> list[bool]:
        """Whether each of the parent ``ids`` will be in the index after the next commit, as
        things are staged now (``HybridIndex.holds``): committed and not staged for
        deletion, or staged by ``add``/``upsert``.

        Raises
        ------
        TypeError, ValueError
            ``ids`` is a single id, or holds something that is no id (``ids.check_ids``: an
            ``int`` is its decimal string).
        """
        return [self._chunks_of(parent) > 0 for parent in check_ids(ids)]

    def commit(self, **options: Any) -> None:
        """Make the staged changes visible to searches and durable in the directory the
        index is attached to (``HybridIndex.commit``), then let the inner engine's merge
        policy merge segments if needed.

        Parameters
        ----------
        **options
            ``HybridIndex.commit``'s options, all keyword-only: ``embedding_cache``
            (``EmbeddingCache`` or None: the cache the new chunks are encoded through),
            ``num_threads`` (int or None: the threads of the new segment's build, as in the
            retrievers' ``build``) and ``show_progress`` (bool, default False).

        Raises
        ------
        TypeError
            An option ``HybridIndex.commit`` does not take.
        """
        try:
            self._engine.commit(**options)
        finally:
            self._settle()

    def merge(self, *, num_threads: int | None = None) -> None:
        """Commit, then rewrite the inner engine's segments into one without its deleted
        chunks (``HybridIndex.merge``). The parents are unchanged: searches rank and score
        as before the merge."""
        try:
            self._engine.merge(num_threads=num_threads)
        finally:
            self._settle()

    def rollback(self) -> StagedChanges:
        """Drop every change staged since the last commit (``add``, ``upsert``, ``delete``),
        in the inner engine and in the parent bookkeeping; the index and its searches are
        unchanged (``HybridIndex.rollback``).

        Returns
        -------
        StagedChanges
            What was dropped, in parents (``staged`` before the call).

        Raises
        ------
        PinnedEngineError, DegradedEngineError
            The inner engine cannot change the index; nothing is dropped.
        """
        self._engine.rollback()
        dropped = self.staged
        self._staged.clear()
        return dropped

    @property
    def staged(self) -> StagedChanges:
        """How many parent changes are staged and not committed yet (``HybridIndex.staged``,
        counted in parents, not chunks): parents to add (``added``, by ``add`` or
        ``upsert``) and committed parents to delete (``deleted``, by ``delete``, or replaced
        by ``upsert``)."""
        return StagedChanges(
            sum(1 for count in self._staged.values() if count),
            sum(1 for parent in self._staged if parent in self._committed),
        )

    @property
    def has_staged(self) -> bool:
        """Whether changes are staged and not committed yet (``close`` drops them)."""
        return self._engine.has_staged

    def _settle(self) -> None:
        """Count the staged parents as committed once the inner engine holds nothing staged
        (its commit went through, even if a merge after it failed); keep them staged
        otherwise."""
        if self._engine.has_staged:
            return
        for parent, count in self._staged.items():
            if count:
                self._committed[parent] = count
            else:
                self._committed.pop(parent, None)
        self._staged.clear()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the last commit to the new (or empty) directory ``path`` and attach to it, as
        ``HybridIndex.save``."""
        self._engine.save(path)

    def close(self) -> None:
        """Give up the directory's write lock; staged changes are dropped."""
        self._engine.close()
        self._staged.clear()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _chunks_of(self, parent: str) -> int:
        """Chunks of ``parent`` once the staged changes are committed (0: not there)."""
        return self._staged.get(parent, self._committed.get(parent, 0))
