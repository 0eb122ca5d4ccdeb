"""Index directories: a versioned ``manifest.json`` beside ``.npy`` arrays, replaced atomically.

Layout of a directory written by ``write_index_dir``::

    manifest.json     {"format", "format_version", "library_version", ..., "files": {...}}
    <name>.npy        one numpy array per entry of manifest["files"], with its sha256 and size
    <component>       optionally, files in another format (e.g. an hnswlib graph), written by
                      the caller and listed in manifest["files"] the same way
    <directory>/      optionally, nested index directories (manifest["directories"])

Nothing is pickled: arrays load with ``allow_pickle=False`` and the manifest is JSON.

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
- After each save, the slots that no save holds and in which no reader holds a directory are
  removed: previous versions, and what killed saves left. A version a reader still holds stays
  until a save after that reader is done.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine import _rename
from hybrid_engine._version import __version__
from hybrid_engine.errors import IndexFormatError

MANIFEST = "manifest.json"
_NEW = "new"  # in a slot: the index being saved; after the swap, the one it replaced
_PREVIOUS = "index"  # in a slot: the index that a save in two renames has moved aside
_ATTEMPTS = 50  # of opening a directory that concurrent saves keep replacing
_PROC_FD = Path("/proc/self/fd")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync(path: Path) -> None:
    """Flush a file or a directory entry list to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _describe(file: Path) -> dict[str, Any]:
    return {"sha256": _sha256(file), "bytes": file.stat().st_size}


def _check_component_name(name: str) -> None:
    if Path(name).name != name or name.endswith(".npy") or name in (MANIFEST, "", ".", ".."):
        raise ValueError(
            f"component file name {name!r} must be a plain file name, neither {MANIFEST} nor "
            "ending in .npy (those are the arrays')"
        )


def user_cache_dir(env: str, name: str) -> Path:
    """``$<env>`` if set, else ``<cache>/hybrid_engine/<name>`` where ``<cache>`` is
    ``$XDG_CACHE_HOME`` or ``~/.cache``: where prepared models and embeddings live."""
    if override := os.environ.get(env):
        return Path(override).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "hybrid_engine" / name


def delimits(offsets: np.ndarray, data: np.ndarray, count: int) -> bool:
    """Whether 1-d ``offsets`` cut ``data`` into ``count`` pieces: ``count + 1`` entries that
    rise (or stay) from 0 to ``len(data)``. For the offset arrays of variable-length items."""
    return bool(
        len(offsets) == count + 1
        and offsets[0] == 0
        and offsets[-1] == len(data)
        and not np.any(np.diff(offsets) < 0)
    )


def write_index_dir(
    path: str | os.PathLike[str],
    fmt: str,
    format_version: int,
    metadata: dict[str, Any],
    arrays: dict[str, np.ndarray],
    components: Mapping[str, Callable[[Path], None]] | None = None,
    directories: Mapping[str, Callable[[Path], None]] | None = None,
) -> None:
    """Write ``arrays``, ``components``, ``directories`` and a manifest to directory ``path``,
    replacing an index of format ``fmt`` there atomically.

    Everything is written and fsynced in a slot beside ``path`` first, then swapped in: readers
    and a crash at any point find the previous index or the new one at ``path``, whole (see the
    module docstring). Thread-safety: any number of threads and processes may save and load the
    same ``path`` at once; the last save to swap in wins.

    Parameters
    ----------
    components : mapping of str to callable, optional
        Files that are not numpy arrays, by file name (a plain name not ending in ``.npy``).
        Each callable gets the path to write its file to, inside the new directory; the file is
        then fsynced and listed in the manifest with its sha256 and size, like the arrays. An
        exception from a callable aborts the save like any other failure.
    directories : mapping of str to callable, optional
        Sub-directories by plain name, each written by its callable at the path it gets (e.g.
        another index's ``save``), so that a composite index is replaced as one; listed in
        ``manifest["directories"]``, each checked by its own reader.

    Raises
    ------
    FileExistsError
        ``path`` exists and is not an index of format ``fmt`` (another format's, or not an
        index at all): nothing is overwritten.
    ValueError
        A component name that is not a plain file name, or a component callable that wrote no
        file.
    """
    components = components or {}
    directories = directories or {}
    for name in (*components, *directories):
        _check_component_name(name)
    target = Path(path)
    _check_replaceable(target, fmt)
    target.parent.mkdir(parents=True, exist_ok=True)
    slot, lock = _reserve_slot(target)
    try:
        try:
            _write_contents(
                slot / _NEW, fmt, format_version, metadata, arrays, components, directories
            )
            replaced = _publish(slot / _NEW, target, fmt)
        except BaseException:
            if not (slot / _PREVIOUS).exists():  # else a failed swap left the only copy there
                shutil.rmtree(slot, ignore_errors=True)
            raise
        if not replaced:
            slot.rmdir()
    finally:
        os.close(lock)
    _fsync(target.parent)
    _remove_unused(target)


def _check_replaceable(target: Path, fmt: str) -> None:
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


def _write_contents(
    folder: Path,
    fmt: str,
    format_version: int,
    metadata: dict[str, Any],
    arrays: dict[str, np.ndarray],
    components: Mapping[str, Callable[[Path], None]],
    directories: Mapping[str, Callable[[Path], None]],
) -> None:
    """Write the new directory ``folder`` and its manifest (last), each fsynced."""
    folder.mkdir(mode=0o700)
    files: dict[str, dict[str, Any]] = {}
    for name, array in arrays.items():
        file = folder / f"{name}.npy"
        with open(file, "wb") as f:
            np.save(f, np.ascontiguousarray(array), allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        files[file.name] = _describe(file)
    for name, write in components.items():
        file = folder / name
        write(file)
        if not file.is_file():
            raise ValueError(f"the writer of component {name!r} created no file at {file}")
        _fsync(file)
        files[name] = _describe(file)
    for name, write in directories.items():
        write(folder / name)
        if not (folder / name).is_dir():
            raise ValueError(f"the writer of directory {name!r} created none at {folder / name}")
    manifest = {
        "format": fmt,
        "format_version": format_version,
        "library_version": __version__,
        **metadata,
        "files": files,
        "directories": sorted(directories),
    }
    with open(folder / MANIFEST, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    _fsync(folder)


def _publish(staged: Path, target: Path, fmt: str) -> bool:
    """Move the finished ``staged`` to ``target``; whether it replaced an index there (which is
    in ``staged``'s slot then)."""
    try:
        _rename.rename_noreplace(staged, target)
        return False
    except FileExistsError:
        pass
    _check_replaceable(target, fmt)  # whatever appeared there since the first check
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


# --- reading -----------------------------------------------------------------------------------


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

    Raises
    ------
    IndexFormatError
        ``path`` is not a directory, and no interrupted save left an index to put back there
        (or more than one, or it cannot be moved back: the message says what to do).
    """
    fd = _open_current(Path(path))
    try:
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
        _fsync(path.parent)
        shutil.rmtree(slot, ignore_errors=True)  # the interrupted save's new index, if any
    finally:
        os.close(fd)


def read_index_dir(
    path: str | os.PathLike[str],
    fmt: str,
    format_version: int,
    *,
    mmap: bool = False,
    verify: bool = True,
    components: Collection[str] = (),
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read a directory written by ``write_index_dir``, every file from the same save.

    Parameters
    ----------
    path : path-like
        The index directory (or a path that ``open_index_dir`` yielded, or one inside it).
    fmt, format_version : str, int
        The format the caller reads; anything else is refused.
    mmap : bool
        Memory-map the arrays read-only instead of reading them into memory (the maps stay
        valid after a save replaces and removes the files).
    verify : bool
        Check every array file's sha256 against the manifest (reads every byte once).
    components : collection of str
        Names of the non-array files the format may hold (see ``write_index_dir``). Those the
        manifest lists are checked for size and, whatever ``verify`` says, sha256: they go to
        readers that trust their input. They are left at ``path / name`` for the caller, who
        finds which are present in ``manifest["files"]``; to read them from the save the
        manifest comes from, pass the path that ``open_index_dir(path)`` yields and read them
        there inside its block.

    Returns
    -------
    manifest : dict
    arrays : dict of numpy.ndarray
        Keyed by file name without ``.npy``.

    Raises
    ------
    IndexFormatError
        For a missing directory or file, unreadable JSON, another format or version, a size or
        checksum mismatch, or an array file numpy cannot read. A missing directory that an
        interrupted save moved aside is put back first (see ``open_index_dir``).

    Notes
    -----
    Thread-safety: any number of threads and processes may read while others save ``path``.
    """
    shown = Path(path)
    with open_index_dir(shown) as root:
        manifest = _read_manifest(root, shown, fmt, format_version)
        files = manifest.get("files")
        if not isinstance(files, dict):
            raise IndexFormatError(f"{shown / MANIFEST} lists no files; rebuild the index")
        arrays = _read_files(root, shown, files, mmap=mmap, verify=verify, components=components)
    return manifest, arrays


def _read_manifest(root: Path, shown: Path, fmt: str, format_version: int) -> dict[str, Any]:
    """The manifest at ``root`` (named ``shown`` in messages), checked for format and version."""
    try:
        with open(root / MANIFEST, encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise IndexFormatError(
            f"{shown} has no {MANIFEST}: it is not a hybrid_engine index (or an interrupted copy)"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IndexFormatError(
            f"{shown / MANIFEST} is not valid JSON ({exc}); rebuild the index"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise IndexFormatError(f"{shown} holds format {found!r}, expected {fmt!r}")
    if manifest.get("format_version") != format_version:
        raise IndexFormatError(
            f"{shown} has {fmt} format version {manifest.get('format_version')!r}; this "
            f"hybrid_engine {__version__} reads version {format_version}: rebuild the index with "
            "this version"
        )
    return manifest


def _read_files(
    root: Path,
    shown: Path,
    files: dict[str, Any],
    *,
    mmap: bool,
    verify: bool,
    components: Collection[str],
) -> dict[str, np.ndarray]:
    """Check the ``files`` a manifest lists at ``root`` and load its arrays."""
    arrays: dict[str, np.ndarray] = {}
    for name, info in files.items():
        file, named = root / name, shown / name
        if Path(name).name != name or not (name.endswith(".npy") or name in components):
            raise IndexFormatError(f"{shown / MANIFEST} names an unexpected file {name!r}")
        if not isinstance(info, dict):
            raise IndexFormatError(f"{shown / MANIFEST} describes {name} as {info!r}, not a dict")
        if not file.is_file():
            raise IndexFormatError(f"{shown} is missing {name}; rebuild the index")
        if file.stat().st_size != info.get("bytes"):
            raise IndexFormatError(
                f"{named} has {file.stat().st_size} bytes, the manifest says {info.get('bytes')}: "
                "the file is truncated or was changed; rebuild the index"
            )
        if (verify or name in components) and _sha256(file) != info.get("sha256"):
            raise IndexFormatError(
                f"{named} fails its sha256 check: it is corrupt; rebuild the index"
            )
        if name in components:
            continue
        try:
            arrays[name[: -len(".npy")]] = np.load(
                file, mmap_mode="r" if mmap else None, allow_pickle=False
            )
        except (ValueError, OSError, EOFError) as exc:
            raise IndexFormatError(f"{named} is not a readable numpy array ({exc})") from None
    return arrays
