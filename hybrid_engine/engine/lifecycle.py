"""The life of a ``HybridIndex`` after it is built: staging documents and deletions,
committing them, merging segments, saving to and loading from an index directory, giving up
its write lock (``live.state`` does the work)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar, cast

from hybrid_engine.corpus import Document
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.engine.format import read_engine
from hybrid_engine.errors import DegradedEngineError, PinnedEngineError
from hybrid_engine.ids import check_ids
from hybrid_engine.live.pending import StagedChanges
from hybrid_engine.live.snapshot import Snapshot
from hybrid_engine.live.state import LiveState
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.protocols import SparseEncoder, TextEncoder
from hybrid_engine.storage import check_mmap

_Self = TypeVar("_Self", bound="Lifecycle")


class Lifecycle:
    """The methods of ``HybridIndex`` that change, save and load its ``_state``."""

    _state: LiveState

    def __init__(self, state: LiveState) -> None:
        self._state = state
        self._unloaded: dict[str, str] = {}
        """The legs ``load(allow_degraded=True)`` left out, with why."""
        self._pinned: Snapshot | None = None
        """The commit every search runs on (``HybridIndex.pinned``); None: the newest."""

    def _check_writable(self) -> None:
        """Raise unless every leg is loaded and the engine is not pinned: an index loaded
        without a leg must not commit, and a pinned engine would not see its own changes."""
        if self._pinned is not None:
            raise PinnedEngineError(
                "this engine is pinned to one commit (HybridIndex.pinned()): its searches would "
                "not see the change; add, delete and commit through the engine it was pinned from"
            )
        if self._unloaded:
            legs = ", ".join(self._unloaded)
            raise DegradedEngineError(
                f"this engine was loaded without its {legs} leg (allow_degraded=True), so it "
                "cannot change the index (its new segments would lack the leg); fix the "
                "model and load the index again to write"
            )

    def add(self, documents: Iterable[Document]) -> list[str]:
        """Stage new documents; ``commit`` makes them searchable.

        Every document is checked here, so that what a commit would refuse is refused now,
        with nothing staged: a later ``commit`` of valid documents never fails because of
        this call.

        Parameters
        ----------
        documents : iterable of dict or str
            ``{"_id", "title", "text", "metadata"}`` dicts (``live.documents``: other
            top-level keys are metadata fields too). ``_id`` follows ``ids.check_id``'s rule:
            a ``str`` of 1 to 512 characters without surrounding whitespace or control
            characters, or an ``int`` (taken as its decimal string). A document without
            ``_id`` gets a new random id (a UUID4, ``ids.new_id``), which never collides with
            one you chose. A title with an empty text is indexed by its title.

        Returns
        -------
        list of str
            The ids of the documents staged, in order (those generated included).

        Raises
        ------
        DuplicateIdError
            A ``ValueError``: an id already in the index or staged (named; use ``upsert``),
            or an id given twice.
        ValueError, TypeError
            A document with neither title nor text, a title or text that is not valid
            Unicode, a bad id, a bad document or metadata value: the message names the
            document by its ``_id`` and its 1-based number among ``documents``.
        PinnedEngineError, DegradedEngineError
            This engine cannot change the index.

        Nothing is staged on an error.
        """
        self._check_writable()
        return self._state.add(documents, replace=False)

    def upsert(self, documents: Iterable[Document]) -> list[str]:
        """Stage documents, replacing those whose ids are already in the index (as ``add``
        otherwise: the same checks, the staged ids returned). A replaced document moves to
        the end of the collection's order. A document without ``_id`` gets a new id, so it
        never replaces one."""
        self._check_writable()
        return self._state.add(documents, replace=True)

    def delete(self, ids: Iterable[str | int], *, missing_ok: bool = False) -> int:
        """Stage the deletion of documents by id; ``commit`` makes it visible.

        Parameters
        ----------
        ids : iterable of str or int
            Document ids (``ids.check_ids``: an ``int`` is its decimal string).
        missing_ok : bool
            Skip the ids not in the index (nor staged) instead of raising.

        Returns
        -------
        int
            Documents deleted.

        Raises
        ------
        UnknownIdError
            A ``KeyError``: ids not in the index (nor staged), unless ``missing_ok``: then
            they are skipped.
        TypeError, ValueError
            ``ids`` is a single id, or holds something that is no id (``ids.check_id``).

        Nothing is staged on an error.
        """
        self._check_writable()
        return self._state.delete(check_ids(ids), missing_ok=missing_ok)

    def holds(self, ids: Iterable[str | int]) -> list[bool]:
        """Whether each of ``ids`` will be live after the next commit, as things are staged
        now: committed and not staged for deletion, or staged by ``add``/``upsert``.

        Raises
        ------
        TypeError, ValueError
            ``ids`` is a single id, or holds something that is no id (``ids.check_id``: an
            ``int`` is its decimal string).
        """
        return self._state.holds(check_ids(ids))

    def commit(
        self,
        *,
        embedding_cache: EmbeddingCache | None = None,
        num_threads: int | None = None,
        show_progress: bool = False,
    ) -> None:
        """Make the staged changes visible to searches from now on, and durable in the
        directory the engine is attached to (``save``/``load``); then let the merge policy
        (``live.merge_policy``) merge segments if needed.

        The staged documents become a new segment (encoded now, through ``embedding_cache``
        when given). BM25 statistics are those of the live documents after the commit, so
        every score equals that of an index freshly built over them. A crash at any point
        leaves the directory at this commit or the previous one, whole.
        """
        self._check_writable()
        self._state.commit(
            embedding_cache=embedding_cache, num_threads=num_threads, show_progress=show_progress
        )

    def merge(self, *, num_threads: int | None = None) -> None:
        """Commit, then rewrite every segment into one without deleted documents (BM25
        re-analyses the texts; dense and SPLADE reuse the stored vectors)."""
        self._check_writable()
        self._state.merge(num_threads=num_threads)

    @property
    def has_staged(self) -> bool:
        """Whether changes are staged and not committed yet (``close`` drops them)."""
        return self._state.has_pending

    @property
    def staged(self) -> StagedChanges:
        """How many changes are staged and not committed yet: documents to add (``added``)
        and committed documents to delete (``deleted``, those an ``upsert`` replaces
        included)."""
        return self._state.staged

    def rollback(self) -> StagedChanges:
        """Drop every change staged since the last commit (``add``, ``upsert``, ``delete``);
        the index and its searches are unchanged. Returns what was dropped.

        Raises
        ------
        PinnedEngineError, DegradedEngineError
            As ``add``: this engine cannot change the index.
        """
        self._check_writable()
        return self._state.rollback()

    def close(self) -> None:
        """Give up the index directory's write lock; staged changes are dropped."""
        self._state.release()

    def __enter__(self: _Self) -> _Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- persistence --------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the last commit to the new (or empty) directory ``path`` as a live index and
        attach this engine to it: later commits go there (staged changes stay staged).

        A directory that a killed save (of this kind, to a new directory) left without a
        commit point counts as empty: what it holds is removed first. It qualifies only when
        it holds ``write.lock`` and otherwise nothing but entries of the live index's layout
        (segment directories ``seg-N`` and their slots ``.seg-N.old-*``, deletion masks
        ``seg-N.del-G.npy``, temporary ``.*.tmp`` masks and commit points), and no commit
        point (``live.leftovers.first_save_leftovers``).

        Raises
        ------
        FileExistsError
            ``path`` exists and is not empty: it holds a live index (a commit point), or
            anything that no interrupted save leaves (the message names it); nothing in it
            is changed.
        WriterLockedError
            Another engine is saving to ``path`` now.
        """
        self._check_writable()
        self._state.attach(Path(path))

    @classmethod
    def load(
        cls: type[_Self],
        path: str | os.PathLike[str],
        *,
        encoder: TextEncoder | None = None,
        splade_encoder: SparseEncoder | None = None,
        reranker: CrossEncoder | None = None,
        num_threads: int | None = None,
        mmap: bool | str = False,
        allow_degraded: bool = False,
    ) -> _Self:
        """Open the last commit of an index directory; the engine is attached to it.

        What interrupted writes (a killed commit or merge) left in the directory is removed
        first, when no writer holds its lock (taken without waiting, given back at once):
        the entries of the live layout that the last commit point does not name. This is
        best-effort: where this process may not write to the directory (a read-only one, or
        no permission) nothing is removed and the load goes on silently; the next writer
        removes them then.

        Parameters
        ----------
        encoder : TextEncoder, optional
            For the dense leg's text queries; it must be the model that built the index. None:
            the prepared model the index recorded, e.g. ``Encoder.load("all-MiniLM-L6-v2",
            variant="int8")`` (required for a leg built with an encoder of your own).
        splade_encoder : SparseEncoder, optional
            For the SPLADE leg, as ``encoder`` is for the dense one (``SpladeEncoder.load``).
        reranker : CrossEncoder, optional
            The cross-encoder of ``search(rerank=...)``, through its gate (``with_reranker``).
        num_threads : int, optional
            Threads of the default encoders (all cores when None).
        mmap : {False, True, "cold"}
            True: memory-map every array of every segment (the process holds only the pages
            searches touch). ``"cold"``: map only what searches read rarely, the float32
            vectors of a quantized dense leg (read only for the candidates a search rescores)
            and the stored texts, titles and metadata (read for the hits), and read the rest
            into memory: BM25 and SPLADE postings, graph links, codes, ids
            (docs/memory.md). False: read every array.
        allow_degraded : bool
            When the prepared model of the dense or SPLADE leg is missing or damaged, load
            the other legs instead of raising, with a ``DegradedWarning``: the leg is left
            out of every search (``HybridResult.degraded``), ``degraded`` names it, and the
            engine cannot change the index (``add``, ``commit``, ... raise
            ``DegradedEngineError``).

        Raises
        ------
        IndexFormatError
            A missing, corrupt or foreign directory, or one saved in an older format (the
            message says how to rebuild); the recorded model's folder is damaged (a sha256
            mismatch; unless ``allow_degraded``): the message names the folder and
            ``hybrid-engine models prepare``.
        ValueError
            An encoder of another model than the leg's, or none for a leg built with an
            encoder that is not a prepared model.
        ModelNotFoundError
            No encoder given, and the recorded model is not prepared here (unless
            ``allow_degraded``).
        """
        mmap = check_mmap(mmap)
        state, unloaded = read_engine(
            Path(path),
            encoder=encoder,
            splade_encoder=splade_encoder,
            num_threads=num_threads,
            mmap=mmap,
            allow_degraded=allow_degraded,
        )
        engine = cls(state)
        engine._unloaded = unloaded
        for leg in unloaded:
            cast(Any, engine)._health.warned(leg)  # HybridIndex's; warned by read_engine
        if reranker is None:
            return engine
        return cast(Any, engine).with_reranker(reranker)  # HybridIndex's
