"""Replacing an index directory atomically, and reading one version of it.

How a save replaces an index at ``PATH``, so that readers and crashes only ever find a whole one:

- A save reserves a *slot*, a new directory ``.NAME.old-XXXXXXXX`` beside ``PATH``, and holds
  its exclusive ``flock`` until done. It writes and fsyncs the new index in ``slot/new``, then
  swaps ``slot/new`` and ``PATH`` in one step (Linux ``renameat2(RENAME_EXCHANGE)``): ``PATH``
  never goes missing, and the previous index ends up in the slot. Where the filesystem cannot
  swap, it moves ``PATH`` to ``slot/index`` and ``slot/new`` to ``PATH`` instead (the scheme of
  earlier versions); a load that finds ``PATH`` missing then waits for the slot's lock and, if
  the save died in between, moves ``slot/index`` back.
- A reader opens ``PATH`` once, takes a shared ``flock`` on that directory and reads every file
  through it: a save that lands meanwhile changes nothing it reads. A composite index read part
  by part (its sub-directories, or component files opened by path) gets all its parts from one
  save only when they are read under one ``open_index_dir``.
- After each save, and at each load (``open_index_dir``, where the loader may write beside
  ``PATH``), the slots that no save holds and in which no reader holds a directory are
  removed: previous versions, and what killed saves left. A version a reader still holds stays
  until a save or a load after that reader is done.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from hybrid_engine.errors import IndexFormatError
from hybrid_engine.storage import _rename
from hybrid_engine.storage._files import DISK_FULL, MANIFEST, fsync

_NEW = "new"  # in a slot: the index being saved; after the swap, the one it replaced
_PREVIOUS = "index"  # in a slot: the index that a save in two renames has moved aside
_ATTEMPTS = 50  # of opening a directory that concurrent saves keep replacing
_PROC_FD = Path("/proc/self/fd")
SLOT_SUFFIX = r"\.old-[^.]+"
"""What follows ``.NAME`` in the name of a slot of the index ``NAME`` (a regex): ``.old-`` and a
suffix of ``tempfile``'s, which has no dot."""
_SLOT = re.compile(rf"\.(.+){SLOT_SUFFIX}")  # .NAME.old-XXXXXXXX: a slot of the index NAME


def check_replaceable(target: Path, fmt: str) -> None:
    """Refuse to save at ``target`` unless it is free or holds an index of format ``fmt``."""
    if not os.path.lexists(target):
        return
    try:
        with open(target / MANIFEST, encoding="utf-8") as f:
            manifest = json.load(f)
    except (FileNotFoundError, NotADirectoryError):
        raise FileExistsError(
            f"{target} exists and is not a hybrid_engine index; remove it or choose another path"
        ) from None
    except (OSError, ValueError) as exc:  # JSON and UTF-8 decoding errors are ValueErrors
        raise FileExistsError(
            f"{target} has an unreadable {MANIFEST} ({exc}), so it may hold anything; remove "
            "it or choose another path"
        ) from None
    found = manifest.get("format") if isinstance(manifest, dict) else None
    if found != fmt:
        raise FileExistsError(
            f"{target} holds a directory of format {found!r}, not {fmt!r}, and saving would "
            f"replace it; choose another path, or remove {target} first if it is not needed"
        )


def replace_dir(target: Path, fmt: str, write: Callable[[Path], None]) -> None:
    """Put a new directory at ``target``, replacing the index of format ``fmt`` there (if any)
    atomically: ``write`` makes and fills the new directory at the path it gets, fsynced, in a
    slot beside ``target``; it is then swapped in, and unused slots are removed."""
    slot, lock = _reserve_slot(target)
    try:
        try:
            write(slot / _NEW)
            replaced = _publish(slot / _NEW, target, fmt)
        except BaseException as exc:
            if not (slot / _PREVIOUS).exists():  # else a failed swap left the only copy there
                shutil.rmtree(slot, ignore_errors=True)
            if isinstance(exc, OSError) and exc.errno is not None:
                raise _failed_save(exc, target) from exc
            raise
        if not replaced:
            slot.rmdir()
    finally:
        os.close(lock)
    try:
        fsync(target.parent)
    except OSError as exc:
        raise OSError(
            exc.errno,
            f"{target} is saved, and it is what loads see, but syncing its folder failed "
            f"({exc}): it may not survive a power loss; check the disk",
        ) from exc
    _remove_unused(target)


def _failed_save(exc: OSError, target: Path) -> OSError:
    """The error of a save to ``target`` that failed with ``exc`` before it was swapped in."""
    if exc.errno in DISK_FULL:
        return OSError(
            exc.errno,
            f"no space left on the device to save {target}: what was there is kept; free "
            "some space and save again",
        )
    return OSError(exc.errno, f"could not save {target} ({exc}): what was there is kept")


def _reserve_slot(target: Path) -> tuple[Path, int]:
    """A new, empty slot beside ``target``, and a descriptor holding its exclusive lock."""
    for _ in range(_ATTEMPTS):
        slot = Path(tempfile.mkdtemp(prefix=_slot_prefix(target), dir=target.parent))
        try:
            fd = os.open(slot, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            continue  # another save removed it as unused before this locked it
        fcntl.flock(fd, fcntl.LOCK_EX)
        if _is_current(fd, slot):
            return slot, fd
        os.close(fd)
    raise RuntimeError(
        f"other saves removed {_ATTEMPTS} new slots beside {target} in a row; save again"
    )


def _publish(staged: Path, target: Path, fmt: str) -> bool:
    """Move the finished ``staged`` to ``target``; whether it replaced an index there (which is
    in ``staged``'s slot then)."""
    try:
        _rename.rename_noreplace(staged, target)
        return False
    except FileExistsError:
        pass
    check_replaceable(target, fmt)  # whatever appeared there since the first check
    if not _rename.exchange(staged, target):
        _swap_in_two_renames(staged, target)
    return True


def _swap_in_two_renames(staged: Path, target: Path) -> None:
    """Where the filesystem cannot exchange: ``target`` to ``slot/index``, ``staged`` in, and
    the previous index on to ``staged``'s place, where an exchange leaves it.

    Between the first two, ``target`` is missing: a load waits for the slot's lock, which the
    caller holds, and after a crash puts ``slot/index`` back (``_restore_previous``). A
    ``slot/index`` marks just that: a swap in progress or interrupted.
    """
    previous = staged.parent / _PREVIOUS
    os.rename(target, previous)
    try:
        os.rename(staged, target)
    except BaseException:
        os.rename(previous, target)
        raise
    os.rename(previous, staged)


def _slot_prefix(target: Path) -> str:
    return f".{target.name}.old-"


def _slots(target: Path) -> list[Path]:
    """The slots beside ``target``: ``.NAME.old-`` and a suffix of ``tempfile``'s (no dot, so
    that ``.NAME.old-x.old-…``, a slot of the index ``NAME.old-x``, is not one)."""
    prefix = _slot_prefix(target)
    try:
        names = sorted(os.listdir(target.parent))
    except FileNotFoundError:
        return []
    return [
        target.parent / name
        for name in names
        if name.startswith(prefix) and name != prefix and "." not in name[len(prefix) :]
    ]


def _remove_unused(target: Path) -> None:
    """Remove the slots beside ``target`` that no save and no reader holds.

    Not while ``target`` lacks an index: a slot may then hold its only copy.
    """
    if (target / MANIFEST).is_file():
        for slot in _slots(target):
            _remove_if_unused(slot)


def _remove_unused_at_load(target: Path) -> None:
    """``_remove_unused``, best-effort, for a load of ``target``: nothing where this process
    may not write beside it (a read-only directory, no permission) or when ``target`` is a
    pinned version or inside one (``/proc/self/fd/N``: saves never leave slots there), and
    errors are ignored (an unreadable folder, a slot removed meanwhile)."""
    if target.is_relative_to(_PROC_FD):
        return
    with contextlib.suppress(OSError):
        if os.access(target.parent, os.W_OK | os.X_OK):
            _remove_unused(target)


def remove_unused_slots(folder: Path) -> None:
    """Remove the slots in ``folder``, of any index there, that no save and no reader holds,
    except one holding the only copy of an index (put back by the next load): what killed
    saves of indexes that are never saved again (an embedding cache's shards) left.

    Thread-safety: as a save's own removal of unused slots, safe beside saves and loads.
    """
    try:
        entries = sorted(os.listdir(folder))
    except FileNotFoundError:
        return
    for name in entries:
        match = _SLOT.fullmatch(name)
        if match is None:
            continue
        slot = folder / name
        if (slot / _PREVIOUS).exists() and not (folder / match.group(1) / MANIFEST).is_file():
            continue
        _remove_if_unused(slot)


def _remove_if_unused(slot: Path) -> None:
    """Remove ``slot`` unless a save holds its lock or a reader one of a directory in it."""
    held: list[int] = []
    try:
        for directory in _directories(slot):
            held.append(os.open(directory, os.O_RDONLY | os.O_DIRECTORY))
            if not _try_lock(held[-1]):
                return
        shutil.rmtree(slot, ignore_errors=True)
    except OSError:
        return  # removed meanwhile by another save, or unreadable: left alone
    finally:
        for fd in held:
            os.close(fd)


def _directories(top: Path) -> Iterator[Path]:
    """``top``, then every directory below it, listed lazily (after ``top`` is locked)."""
    yield top
    for parent, subdirectories, _ in os.walk(top):
        for name in subdirectories:
            yield Path(parent) / name


def _try_lock(fd: int) -> bool:
    """Take the exclusive lock of ``fd`` if no one holds a lock on it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # BlockingIOError while held; others on filesystems without locks
        return False
    return True


def _is_current(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the directory open as ``fd``."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


@contextmanager
def open_index_dir(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Pin the index directory at ``path`` to the version there now, for the ``with`` block.

    Yields a path that names that version throughout, even when saves replace ``path``
    meanwhile, and whose files stay on disk until the block ends. Read a composite index under
    it (``read_index_dir`` of it and of its sub-directories, component files opened by path)
    to get every part from one save::

        with open_index_dir(path) as root:
            manifest, arrays = read_index_dir(root, FORMAT, FORMAT_VERSION)
            leg = BM25Index.load(root / "bm25")

    On Linux the path is ``/proc/self/fd/N``, valid in this process only, and for the block
    only. Elsewhere it is ``path`` itself: the files stay, but a save during the block makes
    ``path`` name the new version. Thread-safety: any number of readers and saves at once.

    Once ``path`` is open, the slots beside it that no save and no reader holds (what killed
    saves left, versions no reader holds any more) are removed, as after a save: under the
    same locks, so never one a save is writing or a reader is reading. Best-effort: skipped
    silently where this process may not write beside ``path`` (a read-only directory, a
    reader without write permission); what cannot be removed stays for the next save.

    Raises
    ------
    IndexFormatError
        ``path`` is not a directory, and no interrupted save left an index to put back there
        (or more than one, or it cannot be moved back: the message says what to do).
    """
    fd = _open_current(Path(path))
    try:
        _remove_unused_at_load(Path(path))
        yield _PROC_FD / str(fd) if _PROC_FD.is_dir() else Path(path)
    finally:
        os.close(fd)


def _open_current(path: Path) -> int:
    """A descriptor of the directory at ``path``, holding the shared lock that keeps saves
    from removing it once they replace it."""
    for _ in range(_ATTEMPTS):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        except FileNotFoundError:
            _restore_previous(path)
            continue
        except NotADirectoryError:
            raise IndexFormatError(
                f"{path} is not a directory; build and save an index there first"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits while a save removes it, if it just did
            if _is_current(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise IndexFormatError(
        f"saves replaced {path} {_ATTEMPTS} times while this was opening it; load again"
    )


def _restore_previous(path: Path) -> None:
    """``path`` is missing: put back the index that a save in two renames moved aside to
    ``slot/index``, once the slot's lock shows that the save is over (finished or dead).

    Returns when ``path`` may be there again. Raises ``IndexFormatError`` when there is no such
    index, more than one, or it cannot be moved back.
    """
    moved = [slot for slot in _slots(path) if (slot / _PREVIOUS / MANIFEST).is_file()]
    if not moved:
        if os.path.lexists(path):
            return  # a save in two renames finished since ``path`` was found missing
        raise IndexFormatError(f"{path} is not a directory; build and save an index there first")
    if len(moved) > 1:
        listing = ", ".join(str(slot / _PREVIOUS) for slot in moved)
        raise IndexFormatError(
            f"{path} is missing, and interrupted saves left previous indexes at {listing}: "
            f"move the one to keep back (mv SLOT/{_PREVIOUS} {path}) and delete the others"
        )
    slot = moved[0]
    try:
        fd = os.open(slot, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return  # put back, or removed, meanwhile
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held by a save in progress until it is done
        if os.path.lexists(path) or not (slot / _PREVIOUS / MANIFEST).is_file():
            return
        try:
            _rename.rename_noreplace(slot / _PREVIOUS, path)
        except FileExistsError:
            return
        except OSError as exc:
            raise IndexFormatError(
                f"a save into {path} was interrupted after moving the previous index to "
                f"{slot / _PREVIOUS}, which could not be moved back ({exc}); move it back "
                f"with `mv {slot / _PREVIOUS} {path}`"
            ) from None
        fsync(path.parent)
        shutil.rmtree(slot, ignore_errors=True)  # the interrupted save's new index, if any
    finally:
        os.close(fd)
