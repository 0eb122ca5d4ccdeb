"""Where ``index`` saves: a new (or empty) output directory as it is, and with ``--force`` an
existing index replaced atomically: the new one is built in a hidden sibling directory and
swapped with the old one in one step (Linux ``renameat2(RENAME_EXCHANGE)``), so a reader
finds the old index or the new one at the path, never neither; the old one is removed after.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hybrid_engine.errors import WriterLockedError
from hybrid_engine.live import layout
from hybrid_engine.live.commits import WriterLock, is_live_index
from hybrid_engine.storage import _rename


@contextmanager
def output_dir(path: Path, *, force: bool) -> Iterator[Path]:
    """The directory to save the index of ``path`` in, for the ``with`` block.

    ``path`` itself when it is missing or an empty directory. Otherwise, with ``force``, a new
    sibling ``.NAME.new-XXXXXXXX`` that replaces ``path`` when the block ends without error
    (removed, ``path`` unchanged, on an error); the old index's write lock is held for the
    whole block, so no ``add``, ``delete`` or ``serve`` changes it meanwhile.

    Raises
    ------
    FileExistsError
        ``path`` exists and is not empty, without ``force`` (the message names ``--force``);
        with it, ``path`` holds something other than a live index (no commit point), which
        is never removed.
    WriterLockedError
        With ``force``: another writer holds the old index (a running ``serve``, say).
    """
    if not path.exists() or (path.is_dir() and not any(path.iterdir())):
        yield path
        return
    if not force:
        raise FileExistsError(
            f"{path} exists and is not empty; pass --force (or --overwrite) to replace the "
            "index there, or choose another output"
        )
    if not is_live_index(path):
        raise FileExistsError(
            f"{path} is not a hybrid_engine index (it has no commit-*.json), so --force does "
            "not replace it; remove it yourself or choose another output"
        )
    lock = _writer_lock(path)
    try:
        new = Path(tempfile.mkdtemp(prefix=f".{path.name}.new-", dir=path.parent))
        try:
            yield new
            _swap(new, path)
        except BaseException:
            shutil.rmtree(new, ignore_errors=True)
            raise
    finally:
        lock.release()
    shutil.rmtree(new, ignore_errors=True)  # the old index, swapped there


def _writer_lock(path: Path) -> WriterLock:
    """The write lock of the index at ``path``, in the command line's words when another
    writer holds it."""
    try:
        return WriterLock(path)
    except WriterLockedError:
        raise WriterLockedError(
            f"another writer holds {path / layout.LOCK} (a running `hybrid-engine serve`, "
            "add or delete): stop it before replacing the index with --force"
        ) from None


def _swap(new: Path, path: Path) -> None:
    """Put ``new`` at ``path`` and the index that was there at ``new``: in one step where the
    filesystem can, else by two renames (``path`` is missing between them)."""
    if _rename.exchange(new, path):
        return
    aside = Path(tempfile.mkdtemp(prefix=f".{path.name}.aside-", dir=path.parent)) / "index"
    os.rename(path, aside)
    try:
        os.rename(new, path)
    except BaseException:
        os.rename(aside, path)
        raise
    os.rename(aside, new)
    aside.parent.rmdir()
