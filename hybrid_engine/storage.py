"""Index directories: a versioned ``manifest.json`` beside ``.npy`` arrays, written atomically.

Layout of a directory written by ``write_index_dir``::

    manifest.json     {"format", "format_version", "library_version", ..., "files": {...}}
    <name>.npy        one numpy array per entry of manifest["files"], with its sha256 and size
    <component>       optionally, files in another format (e.g. an hnswlib graph), written by
                      the caller and listed in manifest["files"] the same way

Nothing is pickled: arrays load with ``allow_pickle=False`` and the manifest is JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine._version import __version__
from hybrid_engine.errors import IndexFormatError

MANIFEST = "manifest.json"


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
    atomically.

    Everything is written and fsynced in a temporary sibling directory first, which is then
    renamed into place; an existing index at ``path`` is swapped out only after that, so an
    interrupted save leaves the previous index (or nothing) at ``path``, never a mix.

    Parameters
    ----------
    components : mapping of str to callable, optional
        Files that are not numpy arrays, by file name (a plain name not ending in ``.npy``).
        Each callable gets the path to write its file to, inside the temporary directory; the
        file is then fsynced and listed in the manifest with its sha256 and size, like the
        arrays. An exception from a callable aborts the save like any other failure.
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
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        files: dict[str, dict[str, Any]] = {}
        for name, array in arrays.items():
            file = tmp / f"{name}.npy"
            with open(file, "wb") as f:
                np.save(f, np.ascontiguousarray(array), allow_pickle=False)
                f.flush()
                os.fsync(f.fileno())
            files[file.name] = _describe(file)
        for name, write in components.items():
            file = tmp / name
            write(file)
            if not file.is_file():
                raise ValueError(f"the writer of component {name!r} created no file at {file}")
            _fsync(file)
            files[name] = _describe(file)
        for name, write in directories.items():
            write(tmp / name)
            if not (tmp / name).is_dir():
                raise ValueError(f"the writer of directory {name!r} created none at {tmp / name}")
        manifest = {
            "format": fmt,
            "format_version": format_version,
            "library_version": __version__,
            **metadata,
            "files": files,
            "directories": sorted(directories),
        }
        with open(tmp / MANIFEST, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=2, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        _fsync(tmp)
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
            try:
                os.replace(target, old / "index")
            except BaseException:
                old.rmdir()
                raise
            try:
                os.replace(tmp, target)
            except BaseException:
                # Put the previous index back rather than leave nothing at ``path``.
                os.replace(old / "index", target)
                old.rmdir()
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
        _fsync(target.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


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


def read_index_dir(
    path: str | os.PathLike[str],
    fmt: str,
    format_version: int,
    *,
    mmap: bool = False,
    verify: bool = True,
    components: Collection[str] = (),
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read a directory written by ``write_index_dir``.

    Parameters
    ----------
    path : path-like
        The index directory.
    fmt, format_version : str, int
        The format the caller reads; anything else is refused.
    mmap : bool
        Memory-map the arrays read-only instead of reading them into memory.
    verify : bool
        Check every array file's sha256 against the manifest (reads every byte once).
    components : collection of str
        Names of the non-array files the format may hold (see ``write_index_dir``). Those the
        manifest lists are checked for size and, whatever ``verify`` says, sha256: they go to
        readers that trust their input. They are left at ``path / name`` for the caller, who
        finds which are present in ``manifest["files"]``.

    Returns
    -------
    manifest : dict
    arrays : dict of numpy.ndarray
        Keyed by file name without ``.npy``.

    Raises
    ------
    IndexFormatError
        For a missing directory or file, unreadable JSON, another format or version, a size or
        checksum mismatch, or an array file numpy cannot read.
    """
    root = Path(path)
    if not root.is_dir():
        raise IndexFormatError(f"{root} is not a directory; build and save an index there first")
    try:
        with open(root / MANIFEST, encoding="utf-8") as f:
            manifest = json.load(f)
    except FileNotFoundError:
        raise IndexFormatError(
            f"{root} has no {MANIFEST}: it is not a hybrid_engine index (or an interrupted copy)"
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise IndexFormatError(
            f"{root / MANIFEST} is not valid JSON ({exc}); rebuild the index"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise IndexFormatError(f"{root} holds format {found!r}, expected {fmt!r}")
    if manifest.get("format_version") != format_version:
        raise IndexFormatError(
            f"{root} has {fmt} format version {manifest.get('format_version')!r}; this "
            f"hybrid_engine {__version__} reads version {format_version}: rebuild the index with "
            "this version"
        )
    files = manifest.get("files")
    if not isinstance(files, dict):
        raise IndexFormatError(f"{root / MANIFEST} lists no files; rebuild the index")
    arrays: dict[str, np.ndarray] = {}
    for name, info in files.items():
        file = root / name
        if Path(name).name != name or not (name.endswith(".npy") or name in components):
            raise IndexFormatError(f"{root / MANIFEST} names an unexpected file {name!r}")
        if not isinstance(info, dict):
            raise IndexFormatError(f"{root / MANIFEST} describes {name} as {info!r}, not a dict")
        if not file.is_file():
            raise IndexFormatError(f"{root} is missing {name}; rebuild the index")
        if file.stat().st_size != info.get("bytes"):
            raise IndexFormatError(
                f"{file} has {file.stat().st_size} bytes, the manifest says {info.get('bytes')}: "
                "the file is truncated or was changed; rebuild the index"
            )
        if (verify or name in components) and _sha256(file) != info.get("sha256"):
            raise IndexFormatError(
                f"{file} fails its sha256 check: it is corrupt; rebuild the index"
            )
        if name in components:
            continue
        try:
            arrays[name[: -len(".npy")]] = np.load(
                file, mmap_mode="r" if mmap else None, allow_pickle=False
            )
        except (ValueError, OSError, EOFError) as exc:
            raise IndexFormatError(f"{file} is not a readable numpy array ({exc})") from None
    return manifest, arrays
