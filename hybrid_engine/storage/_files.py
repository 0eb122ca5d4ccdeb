"""What every part of an index directory's handling shares: the manifest's name, file hashes,
fsync, the errnos of a full disk."""

from __future__ import annotations

import errno
import hashlib
import os
import tokenize
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
"""The errnos of a write that found no space (the device full, or the user's quota)."""
NPY_ERRORS: tuple[type[Exception], ...] = (
    ValueError,
    OSError,
    EOFError,
    SyntaxError,
    tokenize.TokenError,
)
"""What ``numpy.load(..., allow_pickle=False)`` raises for a file that is no readable array: a
bad magic, header or size, and (the header is parsed as a Python literal) a header the
tokenizer or the parser rejects."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fsync(path: Path) -> None:
    """Flush a file or a directory entry list to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def describe(file: Path) -> dict[str, Any]:
    return {"sha256": sha256(file), "bytes": file.stat().st_size}
