"""What interrupted writes leave in a live index directory, and who may remove it.

A write that dies (``kill -9``, a power loss) leaves entries that its commit point would have
named, or that it would have removed after it: segment directories and their slots
(``.seg-N.old-*``), deletion masks and their temporary files, a temporary commit point, and
commit points and segments it replaced. Only entries of that layout (``layout``: the names
and kinds it writes) are ever taken for leftovers here; anything else is the user's.

- ``remove_at_open``: a load removes the leftovers of an index that has a commit point,
  best-effort, while no writer holds the lock.
- ``first_save_leftovers``: a save to a directory that a killed first save (``HybridIndex.save``
  to a new directory) left, with no commit point, may take it over.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from hybrid_engine.errors import IndexFormatError
from hybrid_engine.live import commits, layout


def _of_layout(path: Path, name: str) -> bool:
    """Whether entry ``name`` of ``path`` is one a live index's writes make: its name and
    its kind (a directory, or a plain file; never a symbolic link)."""
    try:
        mode = os.lstat(path / name).st_mode
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(mode):
        return layout.is_entry(name, directory=True)
    return stat.S_ISREG(mode) and layout.is_entry(name, directory=False)


def remove_at_open(path: Path) -> None:
    """Remove the leftovers of interrupted writes from the live index at ``path``: the
    entries of the layout (module docstring) that its latest commit point does not name, as
    its next writer would (``commits.remove_unreferenced``), and nothing else.

    Only while no writer holds the lock: it is taken without waiting, and given back at once
    (a writer taking it meanwhile waits for that, ``commits.lock_if_free``). Best-effort and
    silent: nothing is done for an index without a commit point (what a killed first save
    left, which the next save takes over), nor where this process may not write in ``path``
    (a reader of a read-only directory, or one without write permission), nor when the lock
    cannot be taken; entries that cannot be removed stay. Never raises.

    Thread-safety: safe beside any number of loads and one writer, in any processes; a reader
    still reading a commit that this makes older starts over (``read_engine``), as it does
    when a writer removes it.
    """
    with contextlib.suppress(OSError, IndexFormatError):
        if not os.access(path, os.W_OK | os.X_OK) or not _unreferenced(path):
            return
        with commits.lock_if_free(path) as free:
            if free:  # re-read under the lock: a writer may have committed since
                commits.remove_entries(path, _unreferenced(path))


def _unreferenced(path: Path) -> list[str]:
    """The entries of the layout in ``path`` that its latest commit point does not name."""
    keep = commits.named(commits.read_commit(path))
    return [n for n in sorted(os.listdir(path)) if n not in keep and _of_layout(path, n)]


def first_save_leftovers(path: Path) -> list[str]:
    """The entries of ``path`` a save must remove to write a first commit there: none for a
    new or empty directory; those of a first save that was killed before its commit point.

    The rule, conservative: ``path`` holds the lock file (the first thing a save writes
    there, a plain file), no commit point, and otherwise only entries of the live layout, each
    of its kind (module docstring). Nothing else: a user's file, or an index with a commit
    point, is never taken over.

    Returns
    -------
    list of str
        Entry names, the lock file left out.

    Raises
    ------
    FileExistsError
        ``path`` is no directory, holds a commit point, or holds anything else; the message
        names ``path``, what is in the way and the fix.
    """
    if not os.path.lexists(path):
        return []
    if not path.is_dir():
        raise FileExistsError(
            f"{path} exists and is not a directory; save to a new or empty directory"
        )
    names = sorted(os.listdir(path))
    others = [name for name in names if name != layout.LOCK]
    for name in others:
        if layout.COMMIT_POINT.fullmatch(name):
            raise FileExistsError(
                f"{path} exists and is not empty: it holds a live index ({name}); load it "
                f"with HybridIndex.load to change it, or save to a new or empty directory "
                f"(or remove {path} first)"
            )
    foreign = [name for name in others if not _of_layout(path, name)]
    locked = layout.LOCK in names and stat.S_ISREG(os.lstat(path / layout.LOCK).st_mode)
    if foreign or (names and not locked):
        what = f"{foreign[0]!r}" if foreign else f"no plain file {layout.LOCK}"
        raise FileExistsError(
            f"{path} exists and is not empty, and it is not what an interrupted hybrid_engine "
            f"save leaves there (it holds {what}); save to a new or empty directory, or "
            f"remove {path} first"
        )
    return others
