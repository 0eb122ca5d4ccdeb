"""The float32 vectors of a saved dense index read row by row from their file (``os.pread``),
never mapped: what rescores a quantized graph's candidates when ``load(mmap="cold")`` keeps
the vectors on disk.

Why not the memory map: a page fault maps the page cache around it (fault-around, some 16
pages on Linux; ``MADV_RANDOM`` does not stop it), so after a thousand queries' candidates a
mapped vectors file is nearly all in the process's resident set, though only ~30 rows a query
were read. A positional read copies just the rows asked for and maps nothing.
"""

from __future__ import annotations

import os
import weakref
from pathlib import Path

import numpy as np

from hybrid_engine.errors import IndexFormatError

_ADVISE = hasattr(os, "posix_fadvise")
"""Whether the platform can be told of reads to come (Linux can; macOS cannot)."""
_WILLNEED = getattr(os, "POSIX_FADV_WILLNEED", 0)


class VectorFile:
    """Rows of a float32 ``(n, dim)`` C-order array stored from byte ``offset`` of ``file``.

    The file is opened once: the rows stay readable after a save replaces or removes it.
    Thread-safe (positional reads).
    """

    def __init__(self, file: Path, offset: int, shape: tuple[int, int], shown_as: Path) -> None:
        self._fd = os.open(file, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        weakref.finalize(self, os.close, self._fd)
        self._offset, self._shape, self._shown_as = offset, shape, shown_as
        self._row_bytes = 4 * shape[1]

    def advise(self, rows: np.ndarray) -> None:
        """Tell the kernel the rows at the sorted positions ``rows`` (int64) will be read, in
        runs of consecutive positions, so that it reads them from disk concurrently where
        reads one after the other would wait for each in turn (at 256 runs of a cold file, 4x
        faster here: docs/memory.md). Nothing where the platform cannot be told."""
        if not _ADVISE or len(rows) == 0:
            return
        row_bytes = self._row_bytes
        for start, stop in zip(*_runs(rows), strict=True):
            offset = self._offset + int(rows[start]) * row_bytes
            os.posix_fadvise(self._fd, offset, (stop - start) * row_bytes, _WILLNEED)

    def take(self, rows: np.ndarray) -> np.ndarray:
        """float32 ``(len(rows), dim)``: the rows at the sorted positions ``rows`` (int64, in
        ``[0, n)``), read in runs of consecutive positions, one after the other (``advise``
        them first, so that the disk serves them at once).

        Raises
        ------
        IndexFormatError
            The file is shorter than its array (truncated since the load).
        """
        out = np.empty((len(rows), self._shape[1]), dtype=np.float32)
        if len(rows) == 0:
            return out
        view = out.data.cast("B")
        row_bytes = self._row_bytes
        for start, stop in zip(*_runs(rows), strict=True):
            size = (stop - start) * row_bytes
            offset = self._offset + int(rows[start]) * row_bytes
            got = os.preadv(self._fd, [view[start * row_bytes : start * row_bytes + size]], offset)
            if got != size:
                raise IndexFormatError(
                    f"{self._shown_as}: the file ends before row {int(rows[start])}; the index "
                    "is corrupt, rebuild it"
                )
        return out


def _runs(rows: np.ndarray) -> tuple[list[int], list[int]]:
    """The runs of consecutive positions of sorted ``rows``: ``rows[starts[r]:stops[r]]``."""
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = np.concatenate(([0], breaks)).tolist()
    stops = np.concatenate((breaks, [len(rows)])).tolist()
    return starts, stops
