"""A live state in its index directory: read back from a commit point, written there as the
next commit (and what a write that fails means), and a first save into a new directory made
ready and undone.

``state`` decides what a commit holds and when it is served; this module only puts it in the
directory and reads it back, in the format of ``commits``.
"""

from __future__ import annotations

import shutil
from collections.abc import Collection, Sequence
from pathlib import Path

import numpy as np

from hybrid_engine.errors import IndexFormatError
from hybrid_engine.live import commits, leftovers
from hybrid_engine.live.commits import CommitPoint, SegmentEntry, WriterLock
from hybrid_engine.live.config import EngineConfig
from hybrid_engine.live.segment import Segment
from hybrid_engine.protocols import SparseEncoder, TextEncoder
from hybrid_engine.storage._files import DISK_FULL


def read_segments(
    path: Path,
    point: CommitPoint,
    config: EngineConfig,
    *,
    encoder: TextEncoder | None,
    splade_encoder: SparseEncoder | None,
    mmap: bool | str,
) -> tuple[list[Segment], list[np.ndarray | None]]:
    """The segments of commit ``point`` of the index at ``path`` and their live masks (None:
    none deleted), in the commit point's order; the legs' arrays memory-mapped with ``mmap``.

    Raises
    ------
    IndexFormatError
        A missing or corrupt segment or mask file.
    FileNotFoundError
        A file vanished while reading (a writer removed it after a newer commit).
    """
    segments, live = [], []
    for entry in point.segments:
        segment = Segment.load(
            path / entry.name,
            config,
            encoder=encoder,
            splade_encoder=splade_encoder,
            mmap=mmap,
        )
        if len(segment) != entry.num_documents:
            raise IndexFormatError(
                f"{path / entry.name} holds {len(segment)} documents, the commit point "
                f"{entry.num_documents}; rebuild the index"
            )
        segments.append(segment)
        live.append(commits.read_deletes(path, entry))
    return segments, live


def write_state(
    path: Path,
    segments: Sequence[Segment],
    live: Sequence[np.ndarray | None],
    names: Sequence[str],
    *,
    new: Collection[str],
    changed: Collection[str],
    generation: int,
    config: EngineConfig,
    next_segment: int,
) -> None:
    """Write commit ``generation`` of the index at ``path``: ``segments``, named ``names``,
    with live masks ``live``; the segments named in ``new`` are saved, the masks of those in
    ``changed`` (or new to the directory) written, the others' taken from the previous commit
    point; then the commit point, and what it no longer names is removed. The commit
    point's unused ``next_id`` is carried on for earlier releases (``CommitPoint``).

    Only the writer (holding the lock) calls this; it raises what the writes raise (OSError).
    """
    previous = {}
    next_id = 0
    if generation > 1:
        last = commits.read_commit(path)
        previous = {e.name: e for e in last.segments}
        next_id = last.next_id
    entries = []
    for segment, mask, name in zip(segments, live, names, strict=True):
        if name in new:
            segment.save(path / name)
        if mask is None:
            entries.append(SegmentEntry(name=name, num_documents=len(segment)))
        elif name in changed or name not in previous:
            entries.append(commits.write_deletes(path, name, generation, mask))
        else:
            entries.append(previous[name])
    point = CommitPoint(
        generation=generation,
        config=config.to_dict(),
        segments=tuple(entries),
        next_segment=next_segment,
        next_id=max(next_id, sum(entry.num_documents for entry in entries)),
    )
    commits.write_commit(path, point)
    commits.remove_unreferenced(path, point)


def failed_write(path: Path, exc: OSError, generation: int) -> OSError:
    """The error to raise once the state of commit ``generation`` of the index at ``path`` is
    served, when its write (``write_state``) failed after its commit point was in place;
    otherwise raise ``exc`` (told in words when the disk is full)."""
    if commits.is_committed(path, generation):
        commits.remove_unreferenced(path, commits.read_commit(path))
        error = OSError(
            exc.errno,
            f"commit {generation} of {path} is in place, and it is what searches and "
            f"loads see, but finishing it failed ({exc}): it may not survive a power loss; "
            "check the disk",
        )
        error.__cause__ = exc
        return error
    if exc.errno in DISK_FULL:
        raise OSError(
            exc.errno,
            f"no space left on the device to commit to {path}: it stays at commit "
            f"{generation - 1}, and the changes stay staged; free some space and commit "
            "again",
        ) from exc
    raise exc


def start_first_save(path: Path) -> tuple[WriterLock, bool]:
    """Make the new (or empty) directory ``path`` ready for a first commit: what a killed
    first save left there removed (``leftovers.first_save_leftovers`` says what qualifies;
    FileExistsError for anything else), its write lock taken.

    Returns
    -------
    WriterLock
        The lock of ``path``, held.
    bool
        Whether this created ``path`` (for ``undo_first_save``).
    """
    leftovers.first_save_leftovers(path)  # refused before anything is written there
    created = not path.exists()
    path.mkdir(parents=True, exist_ok=True)
    writer = WriterLock(path)
    try:  # checked again under the lock: a save there may have committed since
        commits.remove_entries(path, leftovers.first_save_leftovers(path))
    except BaseException:
        writer.release()
        raise
    return writer, created


def undo_first_save(path: Path, created: bool) -> None:
    """Undo a failed first save to ``path``: remove the directory if the save created it,
    else what the save wrote into it (it was empty)."""
    if created:
        shutil.rmtree(path, ignore_errors=True)
        return
    for child in path.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
