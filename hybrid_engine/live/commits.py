"""A live index directory on disk: segments, deletion masks and commit points.

::

    INDEX/
      commit-00000007.json       a commit point: the engine's settings and, per segment, its
                                 directory and its deletion mask file (if any), with sha256
      seg-000003/                a segment directory (``segment``), written once, never changed
      seg-000003.del-00000007.npy   the packed bits of its deleted documents at commit 7
      write.lock                 held (``flock``) by the one writer

A commit writes the new segment directories and mask files (each fsynced, mask files renamed
into place), then the commit point: written to a temporary file, fsynced, renamed to
``commit-<generation>.json`` and the directory fsynced. That rename is the commit: a crash
before it leaves the previous commit point as the latest, a crash after it the new one; either
way every file the latest commit names is complete. Files that no commit point names (older
segments and masks, temporary files and slots of an interrupted write) are removed by the
writer after each commit and when it first takes the lock, and by a load that finds the lock
free (``leftovers``). The names of these entries: ``layout``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine._version import __version__
from hybrid_engine.errors import IndexFormatError, WriterLockedError
from hybrid_engine.live import layout
from hybrid_engine.storage._files import NPY_ERRORS, fsync, sha256

FORMAT = "hybrid_engine.live"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class SegmentEntry:
    """One segment of a commit point: its directory name, document count and deletion mask
    file (None when nothing is deleted) with that file's sha256 and the deleted count."""

    name: str
    num_documents: int
    deletes: str | None = None
    deletes_sha256: str | None = None
    num_deleted: int = 0


@dataclass(frozen=True)
class CommitPoint:
    """A committed state: its generation, the engine settings (``EngineConfig.to_dict``), the
    segments in order, and the counter that names new segments.

    ``next_id`` is no longer used: ids of documents without ``_id`` were once ``str`` of this
    counter, and collided with ids users chose (issue 24); they are random now
    (``ids.new_id``). The key is still written, as a number at least the last one written
    and the count of documents in the segments, because earlier releases reading this
    format version require it (and would hand out ids from it); it is read when present and
    ignored.
    """

    generation: int
    config: dict[str, Any]
    segments: tuple[SegmentEntry, ...]
    next_segment: int
    next_id: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "library_version": __version__,
            "generation": self.generation,
            "config": self.config,
            "segments": [vars(entry) for entry in self.segments],
            "next_segment": self.next_segment,
            "next_id": self.next_id,
        }


def is_live_index(path: Path) -> bool:
    """Whether ``path`` is a directory holding a commit point."""
    return path.is_dir() and bool(_generations(path))


def is_committed(path: Path, generation: int) -> bool:
    """Whether the commit point of ``generation`` is in place in the index at ``path``."""
    return (path / layout.commit_point_name(generation)).is_file()


def read_commit(path: Path) -> CommitPoint:
    """The latest commit point of the index at ``path``.

    Raises
    ------
    IndexFormatError
        No commit point, or one that is malformed or of another format version (the message
        says how to rebuild).
    """
    if not path.is_dir():
        raise IndexFormatError(f"{path} is not a directory; give the index directory")
    generations = _generations(path)
    if not generations:
        raise IndexFormatError(f"{path} holds no commit point (commit-*.json); is it an index?")
    file = path / layout.commit_point_name(generations[-1])
    try:
        values = json.loads(file.read_text(encoding="utf-8"))
        if values.get("format") != FORMAT:
            raise ValueError(f"format {values.get('format')!r}")
        if values.get("format_version") != FORMAT_VERSION:
            raise IndexFormatError(
                f"{file} is live-index format version {values.get('format_version')}; this "
                f"hybrid_engine {__version__} reads version {FORMAT_VERSION}: rebuild the index "
                "with HybridIndex.build(...) and save it"
            )
        return CommitPoint(
            generation=int(values["generation"]),
            config=dict(values["config"]),
            segments=tuple(SegmentEntry(**entry) for entry in values["segments"]),
            next_segment=int(values["next_segment"]),
            next_id=int(values.get("next_id", 0)),
        )
    except IndexFormatError:
        raise
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise IndexFormatError(
            f"{file}: unreadable commit point ({exc}); rebuild the index"
        ) from None


def read_deletes(path: Path, entry: SegmentEntry) -> np.ndarray | None:
    """The live mask (bool, True = live) of ``entry``'s segment; None when none is deleted.

    Raises
    ------
    IndexFormatError
        The mask file is missing, corrupt or of the wrong size.
    """
    if entry.deletes is None:
        return None
    file = path / entry.deletes
    try:
        if sha256(file) != entry.deletes_sha256:
            raise ValueError("sha256 mismatch")
        packed = np.load(file, allow_pickle=False)
        if packed.dtype != np.uint8 or packed.ndim != 1 or len(packed) * 8 < entry.num_documents:
            raise ValueError(f"array {packed.dtype} {packed.shape}")
        deleted = np.unpackbits(packed, count=entry.num_documents).astype(bool)
        if int(deleted.sum()) != entry.num_deleted:
            raise ValueError("deleted count differs from the commit point")
    except NPY_ERRORS as exc:
        raise IndexFormatError(f"{file}: bad deletion mask ({exc}); rebuild the index") from None
    return ~deleted


def write_deletes(path: Path, name: str, generation: int, live: np.ndarray) -> SegmentEntry:
    """Write segment ``name``'s deletion mask for commit ``generation`` (fsynced, renamed into
    place) and return its entry."""
    deleted = ~live
    file = layout.mask_name(name, generation)
    temporary = path / layout.temporary_name(file)
    with open(temporary, "wb") as f:
        np.save(f, np.packbits(deleted), allow_pickle=False)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path / file)
    return SegmentEntry(
        name=name,
        num_documents=len(live),
        deletes=file,
        deletes_sha256=sha256(path / file),
        num_deleted=int(deleted.sum()),
    )


def write_commit(path: Path, point: CommitPoint) -> None:
    """Publish ``point``: every file it names must already be on disk, fsynced."""
    fsync(path)  # the segment directories and mask files renamed in so far
    name = layout.commit_point_name(point.generation)
    temporary = path / layout.temporary_name(name)
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(point.to_dict(), f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path / name)
    fsync(path)


def remove_unreferenced(path: Path, point: CommitPoint) -> None:
    """Remove what ``point`` does not name: older commit points, segments, masks, temporary
    files and slots of interrupted writes. Only the writer (holding the lock) calls this.
    Never raises: what cannot be removed now is left for the writer's next try."""
    keep = named(point)
    with contextlib.suppress(OSError):
        remove_entries(path, [name for name in os.listdir(path) if name not in keep])


def named(point: CommitPoint) -> set[str]:
    """The entries of an index directory that ``point`` uses: itself, its segment
    directories and deletion mask files, and the lock."""
    keep = {layout.commit_point_name(point.generation), layout.LOCK}
    for entry in point.segments:
        keep.add(entry.name)
        if entry.deletes is not None:
            keep.add(entry.deletes)
    return keep


def remove_entries(path: Path, names: Iterable[str]) -> None:
    """Remove the entries ``names`` of directory ``path`` (directories with what they hold; a
    symbolic link, not what it points to). Never raises: what cannot be removed stays."""
    for name in names:
        child = path / name
        with contextlib.suppress(OSError):
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink()


class WriterLock:
    """The exclusive write lock of an index directory (``flock`` on ``write.lock``): one
    writer at a time, across threads and processes."""

    def __init__(self, path: Path) -> None:
        """Take the lock; WriterLockedError when another writer holds it. A load that holds
        it for a moment to remove leftovers (``lock_if_free``) is waited for, not reported."""
        self._fd = os.open(path / layout.LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if not _try_lock(self._fd) and not _try_lock_once_tidied(path, self._fd):
                raise WriterLockedError(
                    f"another writer holds {path / layout.LOCK}: one engine (thread or process) "
                    "at a time may change an index directory; close the other one "
                    "(engine.close()) or open this one only to search"
                )
        except BaseException:
            os.close(self._fd)
            raise

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = -1


@contextlib.contextmanager
def lock_if_free(path: Path) -> Iterator[bool]:
    """Hold the write lock of the index at ``path`` for the block if no writer holds it now
    (never waits); yields whether it does.

    While the block runs the directory itself is locked too (``flock``, exclusive): a writer
    that finds the write lock taken waits for that one to go before it reports another
    writer, so a load tidying the directory never makes a writer fail. Raises ``OSError``
    where the directory or its lock cannot be opened or locked (no ``write.lock``, a
    filesystem without ``flock``).
    """
    directory = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if not _try_lock(directory):
            yield False  # another load is tidying
            return
        lock = os.open(path / layout.LOCK, os.O_RDONLY)
        try:
            yield _try_lock(lock)
        finally:
            os.close(lock)  # first the write lock, then the directory's
    finally:
        os.close(directory)


def _try_lock(fd: int) -> bool:
    """Take the exclusive ``flock`` of ``fd`` unless someone holds one."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _try_lock_once_tidied(path: Path, fd: int) -> bool:
    """Wait until no load holds the directory ``path`` locked (``lock_if_free``), then try
    the write lock ``fd`` again, holding the directory's shared lock so that no other load
    takes the write lock meanwhile."""
    try:
        directory = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # nothing to wait for: no load can have locked it either
        return _try_lock(fd)
    try:
        with contextlib.suppress(OSError):  # a filesystem without flock: as above
            fcntl.flock(directory, fcntl.LOCK_SH)
        return _try_lock(fd)
    finally:
        os.close(directory)


def _generations(path: Path) -> list[int]:
    try:
        names = os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(int(m.group(1)) for name in names if (m := layout.COMMIT_POINT.fullmatch(name)))
