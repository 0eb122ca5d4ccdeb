"""The live state of an engine: its committed snapshot, its staged mutations, and the index
directory it is attached to (if any).

``commit`` builds a segment of the staged documents, applies the staged deletions, writes both
to the directory (``state_files``), and only then makes the new snapshot the one searches start
from; the merge policy may then merge segments in a further commit. One writer at a time: the
state's own lock serializes its mutating calls between threads, and the directory's
``WriterLock`` (taken on the first mutation, held until ``close``) keeps other engines and
processes out.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from hybrid_engine.corpus import Document
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.errors import IndexFormatError, UnknownIdError
from hybrid_engine.live import commits, layout, state_files
from hybrid_engine.live.commits import CommitPoint, WriterLock
from hybrid_engine.live.config import EngineConfig
from hybrid_engine.live.merge_policy import MergePolicy
from hybrid_engine.live.pending import Pending, StagedChanges
from hybrid_engine.live.segment import Segment
from hybrid_engine.live.snapshot import Snapshot
from hybrid_engine.live.statistics import TermMap
from hybrid_engine.protocols import SparseEncoder, TextEncoder
from hybrid_engine.storage._files import DISK_FULL


class LiveState:
    """Snapshot, staged mutations and directory of one engine (see the module docstring)."""

    def __init__(
        self,
        config: EngineConfig,
        segments: Sequence[Segment],
        names: Sequence[str],
        live: Sequence[np.ndarray | None],
        *,
        encoder: TextEncoder | None,
        splade_encoder: SparseEncoder | None,
        next_segment: int,
        path: Path | None = None,
        generation: int = 0,
        policy: MergePolicy | None = None,
    ) -> None:
        self.config = config
        self.encoder = encoder
        self.splade_encoder = splade_encoder
        self.policy = policy or MergePolicy()
        self.path = path
        self.generation = generation
        self._term_map = TermMap()
        self._names = list(names)
        self._next_segment = next_segment
        self._lock = threading.RLock()
        self._writer: WriterLock | None = None
        self._pending = Pending()
        self.snapshot = self._snapshot(list(segments), list(live))

    # -- reading ------------------------------------------------------------------------------

    def _snapshot(self, segments: list[Segment], live: list[np.ndarray | None]) -> Snapshot:
        term_maps = [
            self._term_map.map(s.bm25) if s.bm25 is not None else np.zeros(0, np.int64)
            for s in segments
        ]
        return Snapshot(segments, live, self._term_map, term_maps)

    @property
    def has_pending(self) -> bool:
        return bool(self._pending)

    # -- mutations ----------------------------------------------------------------------------

    def add(self, documents: Iterable[Document], *, replace: bool) -> list[str]:
        with self._lock:
            self._take_writer_lock()
            return self._pending.add(self.snapshot, documents, replace)

    @property
    def staged(self) -> StagedChanges:
        with self._lock:
            return self._pending.counts()

    def rollback(self) -> StagedChanges:
        """Drop every staged change; what was dropped."""
        with self._lock:
            dropped = self._pending.counts()
            self._pending = Pending()
            return dropped

    def holds(self, ids: Sequence[str]) -> list[bool]:
        """Whether each of ``ids`` (checked ids, ``ids.check_ids``) will be live after the
        next commit (so far)."""
        with self._lock:
            return [self._pending.is_live(self.snapshot, doc_id) for doc_id in ids]

    def delete(self, ids: Sequence[str], *, missing_ok: bool) -> int:
        """Stage the deletion of ``ids`` (checked ids, ``ids.check_ids``); how many were
        live."""
        with self._lock:
            self._take_writer_lock()
            unknown = [doc_id for doc_id in ids if not self._pending.is_live(self.snapshot, doc_id)]
            if unknown and not missing_ok:
                raise UnknownIdError(
                    f"{len(unknown)} id(s) are not in the index, e.g. {unknown[:5]}; nothing was "
                    "deleted (pass missing_ok=True to delete the others)"
                )
            return sum(self._pending.remove(self.snapshot, doc_id) for doc_id in ids)

    def commit(
        self,
        *,
        embedding_cache: EmbeddingCache | None = None,
        num_threads: int | None = None,
        show_progress: bool = False,
        auto_merge: bool = True,
    ) -> None:
        with self._lock:
            if self._pending:
                self._take_writer_lock()
                self._commit_pending(embedding_cache, num_threads, show_progress)
            if auto_merge:
                runs = self.policy.plan(
                    [len(s) for s in self.snapshot.segments], self._live_counts()
                )
                if runs:
                    self._merge(runs, num_threads)

    def merge(self, *, num_threads: int | None = None) -> None:
        """Commit, then merge every segment into one without its deleted documents."""
        with self._lock:
            self.commit(num_threads=num_threads, auto_merge=False)
            n = len(self.snapshot.segments)
            if n > 1 or any(mask is not None for mask in self.snapshot.live):
                self._merge([(0, n)], num_threads)

    def _commit_pending(
        self,
        embedding_cache: EmbeddingCache | None,
        num_threads: int | None,
        show_progress: bool,
    ) -> None:
        snapshot = self.snapshot
        segments = list(snapshot.segments)
        live = list(snapshot.live)
        names = list(self._names)
        changed = set()
        for s, mask in self._pending.live_masks(snapshot).items():
            live[s] = mask
            changed.add(names[s])
        docs = self._pending.documents()
        new_names = []
        if docs is not None:
            segment = Segment.build(
                docs,
                self.config,
                encoder=self.encoder,
                splade_encoder=self.splade_encoder,
                embedding_cache=embedding_cache,
                num_threads=num_threads,
                show_progress=show_progress,
            )
            if segment.splade is not None and self.config.splade_scale is None:
                self.config = self.config.with_splade_scale(segment.splade.scale)
            name = layout.segment_name(self._next_segment)
            self._next_segment += 1
            segments.append(segment)
            live.append(None)
            names.append(name)
            new_names.append(name)
        self._publish(segments, live, names, new_names, changed)

    def _merge(self, runs: list[tuple[int, int]], num_threads: int | None) -> None:
        """Replace each run of segments by one of their live documents (dropping runs with
        none), as one commit."""
        snapshot = self.snapshot
        segments: list[Segment] = []
        live: list[np.ndarray | None] = []
        names: list[str] = []
        new_names: list[str] = []
        starts = {start: stop for start, stop in runs}
        positions = list(snapshot.live_positions())
        s = 0
        while s < len(snapshot.segments):
            stop = starts.get(s)
            if stop is None:
                segments.append(snapshot.segments[s])
                live.append(snapshot.live[s])
                names.append(self._names[s])
                s += 1
                continue
            parts = [(snapshot.segments[i], rows) for i, rows in positions[s:stop] if len(rows)]
            if parts:
                segments.append(
                    Segment.merged(
                        parts,
                        self.config,
                        encoder=self.encoder,
                        splade_encoder=self.splade_encoder,
                        num_threads=num_threads,
                    )
                )
                live.append(None)
                name = layout.segment_name(self._next_segment)
                self._next_segment += 1
                names.append(name)
                new_names.append(name)
            s = stop
        self._publish(segments, live, names, new_names, set())

    def _publish(
        self,
        segments: list[Segment],
        live: list[np.ndarray | None],
        names: list[str],
        new_names: list[str],
        changed: set[str],
    ) -> None:
        """Write the new state to the directory (when attached, as its writer), then serve
        it; the staged mutations are then done.

        A write that fails before its commit point is in place changes nothing (the mutations
        stay staged); one that fails after it (the directory's fsync) still serves the new
        state, which loads already see, and raises that it may not be durable.
        """
        self._take_writer_lock()
        # A segment whose documents are all deleted is dropped.
        kept = [i for i, mask in enumerate(live) if mask is None or mask.any()]
        segments = [segments[i] for i in kept]
        live = [live[i] for i in kept]
        names = [names[i] for i in kept]
        generation = self.generation + 1
        not_durable = None
        if self.path is not None:
            try:
                self._write(segments, live, names, new_names, changed, generation)
            except OSError as exc:
                not_durable = state_files.failed_write(self.path, exc, generation)
        self.generation = generation
        self._names = names
        self.snapshot = self._snapshot(segments, live)
        self._pending = Pending()
        if not_durable is not None:
            raise not_durable

    def _write(
        self,
        segments: list[Segment],
        live: list[np.ndarray | None],
        names: list[str],
        new_names: list[str],
        changed: set[str],
        generation: int,
    ) -> None:
        assert self.path is not None
        state_files.write_state(
            self.path,
            segments,
            live,
            names,
            new=new_names,
            changed=changed,
            generation=generation,
            config=self.config,
            next_segment=self._next_segment,
        )

    def _live_counts(self) -> list[int]:
        return [
            len(seg) if mask is None else int(mask.sum())
            for seg, mask in zip(self.snapshot.segments, self.snapshot.live, strict=True)
        ]

    # -- the directory ------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: Path,
        point: CommitPoint,
        config: EngineConfig,
        *,
        encoder: TextEncoder | None,
        splade_encoder: SparseEncoder | None,
        mmap: bool | str = False,
    ) -> LiveState:
        """The state of commit ``point`` of the index at ``path``, attached to it (the legs'
        arrays memory-mapped with ``mmap``). Raises what ``state_files.read_segments`` does
        (IndexFormatError, FileNotFoundError)."""
        segments, live = state_files.read_segments(
            path, point, config, encoder=encoder, splade_encoder=splade_encoder, mmap=mmap
        )
        return cls(
            config,
            segments,
            [entry.name for entry in point.segments],
            live,
            encoder=encoder,
            splade_encoder=splade_encoder,
            next_segment=point.next_segment,
            path=path,
            generation=point.generation,
        )

    def attach(self, path: Path) -> None:
        """Write the committed state to the new (or empty) directory ``path`` as its first
        commit and attach to it; staged mutations stay staged. What a killed first save left
        in ``path`` is removed first (``leftovers.first_save_leftovers`` says what qualifies;
        FileExistsError for anything else)."""
        with self._lock:
            writer, created = state_files.start_first_save(path)
            previous_path, previous_generation = self.path, self.generation
            self.path, self.generation = path, 0
            try:
                self._write(
                    list(self.snapshot.segments),
                    list(self.snapshot.live),
                    self._names,
                    list(self._names),
                    set(self._names),
                    1,
                )
            except BaseException as exc:
                if isinstance(exc, OSError) and commits.is_committed(path, 1):
                    self._attached(writer)
                    raise state_files.failed_write(path, exc, 1) from exc
                self.path, self.generation = previous_path, previous_generation
                writer.release()
                state_files.undo_first_save(path, created)
                if isinstance(exc, OSError) and exc.errno in DISK_FULL:
                    raise OSError(
                        exc.errno,
                        f"no space left on the device to save to {path}: nothing was saved; "
                        "free some space and save again",
                    ) from exc
                raise
            self._attached(writer)

    def _attached(self, writer: WriterLock) -> None:
        """Hold ``writer``, the lock of the directory just written as commit 1."""
        if self._writer is not None:
            self._writer.release()  # of the directory attached before
        self._writer = writer
        self.generation = 1

    def _take_writer_lock(self) -> None:
        if self.path is not None and self._writer is None:
            self._writer = WriterLock(self.path)
            point = commits.read_commit(self.path)
            latest = point.generation
            if latest != self.generation:
                self._writer.release()
                self._writer = None
                raise IndexFormatError(
                    f"{self.path} has moved on to commit {latest} since this engine loaded "
                    f"commit {self.generation}; load it again to change it"
                )
            commits.remove_unreferenced(self.path, point)

    def release(self) -> None:
        """Give up the directory's write lock (staged mutations are dropped)."""
        with self._lock:
            if self._writer is not None:
                self._writer.release()
                self._writer = None
            self._pending = Pending()
