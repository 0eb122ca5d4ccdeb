"""Index directories: a versioned ``manifest.json`` beside ``.npy`` arrays, replaced atomically.

Layout of a directory written by ``write_index_dir``::

    manifest.json     {"format", "format_version", "library_version", ..., "files": {...}}
    <name>.npy        one numpy array per entry of manifest["files"], with its sha256 and size
    <component>       optionally, files in another format (e.g. an hnswlib graph), written by
                      the caller and listed in manifest["files"] the same way
    <directory>/      optionally, nested index directories (manifest["directories"])

Nothing is pickled: arrays load with ``allow_pickle=False`` and the manifest is JSON.

A save replaces an index atomically and a load reads one version (``replace``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine._version import __version__
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.storage._files import MANIFEST, NPY_ERRORS, describe, fsync, sha256
from hybrid_engine.storage.replace import check_replaceable, open_index_dir, replace_dir


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


MMAP_MODES = (False, True, "cold")
"""What a load's ``mmap`` may be: read every array (False), map every array (True), or map
only the arrays searches read rarely and read the rest (``"cold"``)."""


def check_mmap(mmap: object) -> bool | str:
    """``mmap`` when it is one of ``MMAP_MODES``.

    Raises
    ------
    ValueError
        Anything else, naming the choices.
    """
    if isinstance(mmap, (bool, str)) and mmap in MMAP_MODES:
        return mmap
    raise ValueError(
        f"mmap must be False (read every array), True (map every array) or 'cold' (map only "
        f"what searches read rarely: float32 vectors of a quantized dense leg, stored texts), "
        f"got {mmap!r}"
    )


def in_memory_except(
    arrays: Mapping[str, np.ndarray], mapped: Callable[[str], bool]
) -> dict[str, np.ndarray]:
    """Memory-mapped ``arrays`` (``read_index_dir(mmap=True)``) read into memory, but those
    whose name ``mapped`` keeps mapped: what a ``load(mmap="cold")`` holds."""
    return {name: a if mapped(name) else np.array(a) for name, a in arrays.items()}


def verify_default(verify: bool | None, mmap: bool | str) -> bool:
    """A load's ``verify``: as given, or for None ``not mmap`` (a memory-mapped load reads no
    array whole, so it checks each part when a search first reads it instead)."""
    return not mmap if verify is None else verify


def delimits(offsets: np.ndarray, data: np.ndarray, count: int) -> bool:
    """Whether 1-d ``offsets`` cut ``data`` into ``count`` pieces: ``count + 1`` entries that
    rise (or stay) from 0 to ``len(data)``. For the offset arrays of variable-length items."""
    return bool(
        count >= 0
        and len(offsets) == count + 1
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
    check_replaceable(target, fmt)
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_dir(
        target,
        fmt,
        lambda folder: _write_contents(
            folder, fmt, format_version, metadata, arrays, components, directories
        ),
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
        files[file.name] = describe(file)
    for name, write in components.items():
        file = folder / name
        write(file)
        if not file.is_file():
            raise ValueError(f"the writer of component {name!r} created no file at {file}")
        fsync(file)
        files[name] = describe(file)
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
    fsync(folder)


def read_index_dir(
    path: str | os.PathLike[str],
    fmt: str,
    format_version: int,
    *,
    mmap: bool = False,
    verify: bool = True,
    components: Collection[str] = (),
    shown_as: str | os.PathLike[str] | None = None,
    older_versions: Collection[int] = (),
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Read a directory written by ``write_index_dir``, every file from the same save.

    Parameters
    ----------
    path : path-like
        The index directory (or a path that ``open_index_dir`` yielded, or one inside it).
    fmt, format_version : str, int
        The format the caller reads; anything else is refused (but ``older_versions``).
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
    shown_as : path-like, optional
        The path error messages name (``path`` when None): the user's path when ``path`` is
        the one ``open_index_dir`` yielded.
    older_versions : collection of int
        Earlier versions of ``fmt`` the caller reads too: it finds which in
        ``manifest["format_version"]``.

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
    shown = Path(shown_as if shown_as is not None else path)
    with open_index_dir(path) as root:
        manifest = _read_manifest(root, shown, fmt, {format_version, *older_versions})
        files = manifest.get("files")
        if not isinstance(files, dict):
            raise IndexFormatError(f"{shown / MANIFEST} lists no files; rebuild the index")
        arrays = _read_files(root, shown, files, mmap=mmap, verify=verify, components=components)
    return manifest, arrays


def _read_manifest(root: Path, shown: Path, fmt: str, versions: set[int]) -> dict[str, Any]:
    """The manifest at ``root`` (named ``shown`` in messages), checked for format and for a
    version among ``versions``."""
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
    found = manifest.get("format_version")
    if not isinstance(found, int) or isinstance(found, bool) or found not in versions:
        listed = [str(v) for v in sorted(versions)]
        reads = " and ".join([", ".join(listed[:-1]), listed[-1]] if len(listed) > 2 else listed)
        raise IndexFormatError(
            f"{shown} has {fmt} format version {found!r}; this hybrid_engine {__version__} "
            f"reads version {reads}: rebuild the index with this version"
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
        checked = verify or name in components
        if checked and sha256(file) != info.get("sha256"):
            raise IndexFormatError(
                f"{named} fails its sha256 check: it is corrupt; rebuild the index"
            )
        if name in components:
            continue
        try:
            arrays[name[: -len(".npy")]] = np.load(
                file, mmap_mode="r" if mmap else None, allow_pickle=False
            )
        except NPY_ERRORS as exc:
            if _holds_objects(file):
                raise IndexFormatError(
                    f"{named} holds Python objects (an object dtype): loading it would unpickle "
                    "them, which can run code, so it is refused; rebuild the index"
                ) from None
            raise IndexFormatError(f"{named} is not a readable numpy array ({exc})") from None
    return arrays


def _holds_objects(file: Path) -> bool:
    """Whether the ``.npy`` header of ``file`` declares a dtype of Python objects (read from
    the header alone, which numpy parses with ``ast.literal_eval``; never unpickled)."""
    try:
        with open(file, "rb") as f:
            major, _ = np.lib.format.read_magic(f)
            if major == 1:
                _, _, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                _, _, dtype = np.lib.format.read_array_header_2_0(f)
        return bool(dtype.hasobject)
    except NPY_ERRORS:
        return False
