"""Faults at the dangerous points of saves, commits and cache writes: from the Nth rename,
write or fsync on, the call fails with an ``OSError`` (EIO, ENOSPC, ...) or the process dies
there (``os._exit``: no cleanup handler runs, buffered data is lost), and a failing write can
first write half of its bytes.

The points patched are those every storage layer goes through:

- renames: ``os.rename``, ``os.replace`` and ``storage._rename._renameat2`` (the exchange and
  the no-replace rename of ``storage.replace``);
- writes: the files that ``storage.index_dir`` and ``live.commits`` open for writing (their
  module-level ``open``), i.e. every ``.npy`` array, manifest, deletion mask and commit point;
- fsyncs: ``os.fsync`` (of files and of directories).
"""

from __future__ import annotations

import builtins
import errno
import importlib
import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

DIED = 75
"""Exit status of a process that an injected fault ended."""

WRITERS = ("hybrid_engine.storage.index_dir", "hybrid_engine.live.commits")
"""The modules whose ``open`` for writing is wrapped."""


@dataclass
class Fault:
    """What to inject: from call ``at`` (1-based) of ``kind`` ("rename", "write", "fsync") on
    (only that call unless ``sticky``), ``action`` "raise" (``OSError(error)``) or "exit"
    (``os._exit(DIED)``); a failing write writes half of its bytes first when ``half``. A kind
    of "" injects nothing and only counts the calls (``counts``)."""

    kind: str = ""
    at: int = 0
    action: str = "raise"
    error: int = errno.EIO
    half: bool = False
    sticky: bool = False
    counts: Counter[str] = field(default_factory=Counter)
    fired: int = 0

    def hits(self, kind: str) -> bool:
        """Count a call of ``kind``; whether it is to fail."""
        self.counts[kind] += 1
        n = self.counts[kind]
        hit = kind == self.kind and (n == self.at or (self.sticky and n > self.at))
        self.fired += hit
        return hit

    def fail(self) -> Any:
        if self.action == "exit":
            os._exit(DIED)
        raise OSError(self.error, os.strerror(self.error))


class _File:
    """A file opened for writing whose writes go through ``fault``."""

    def __init__(self, file: Any, fault: Fault) -> None:
        self._file = file
        self._fault = fault

    def write(self, data: Any) -> int:
        if self._fault.hits("write"):
            if self._fault.half:
                if isinstance(data, str):
                    self._file.write(data[: len(data) // 2])
                else:
                    raw = memoryview(data).cast("B")
                    self._file.write(raw[: len(raw) // 2])
                self._file.flush()  # the half reaches the file before the process dies
            return self._fault.fail()
        return int(self._file.write(data))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)

    def __enter__(self) -> _File:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()


@contextmanager
def injected(fault: Fault) -> Iterator[Fault]:
    """Patch the renames, writes and fsyncs (module docstring) to go through ``fault``."""
    from hybrid_engine.storage import _rename

    real_rename, real_replace, real_fsync = os.rename, os.replace, os.fsync
    real_renameat2 = _rename._renameat2

    def rename(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if fault.hits("rename"):
            fault.fail()
        real_rename(src, dst, *args, **kwargs)

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if fault.hits("rename"):
            fault.fail()
        real_replace(src, dst, *args, **kwargs)

    def renameat2(src: Any, dst: Any, flags: int) -> int:
        if _rename._RENAMEAT2 is None:  # as where it is missing: no call is made
            return real_renameat2(src, dst, flags)
        if fault.hits("rename"):
            if fault.action == "exit":
                fault.fail()
            return fault.error  # as the real one reports a failure: its errno
        return real_renameat2(src, dst, flags)

    def fsync(fd: int) -> None:
        if fault.hits("fsync"):
            fault.fail()
        real_fsync(fd)

    def opener(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        opened = builtins.open(file, mode, *args, **kwargs)
        return _File(opened, fault) if set(mode) & set("wax+") else opened

    modules = [importlib.import_module(name) for name in WRITERS]
    os.rename, os.replace, os.fsync = rename, replace, fsync
    _rename._renameat2 = renameat2
    for module in modules:
        module.open = opener  # type: ignore[attr-defined]
    try:
        yield fault
    finally:
        os.rename, os.replace, os.fsync = real_rename, real_replace, real_fsync
        _rename._renameat2 = real_renameat2
        for module in modules:
            del module.open  # type: ignore[attr-defined]
