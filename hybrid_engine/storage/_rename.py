"""The two renames that ``os`` lacks, through Linux's ``renameat2(2)`` (glibc 2.28+, via ctypes):
swap two paths in one step, and rename without replacing what is at the destination.

Where ``renameat2`` is missing (another OS, an older libc) or the filesystem refuses the flag
(NFS, some FUSE filesystems), ``exchange`` says so by returning False and ``rename_noreplace``
falls back to a checked ``os.rename``.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Callable

_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2
# What renameat2 answers when the kernel or the filesystem lacks the flag.
_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP})


def _find_renameat2() -> Callable[..., int] | None:
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError, TypeError):
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    function.restype = ctypes.c_int
    return function


_RENAMEAT2 = _find_renameat2()


def _renameat2(src: os.PathLike[str], dst: os.PathLike[str], flags: int) -> int:
    """0, or the errno of a failed ``renameat2(src, dst, flags)``; ENOSYS without it."""
    if _RENAMEAT2 is None:
        return errno.ENOSYS
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), flags) == 0:
        return 0
    return ctypes.get_errno()


def _error(code: int, src: os.PathLike[str], dst: os.PathLike[str]) -> OSError:
    """The ``OSError`` subclass of ``code`` (FileExistsError, ...) naming both paths."""
    return OSError(code, os.strerror(code), os.fspath(src), None, os.fspath(dst))


def exchange(a: os.PathLike[str], b: os.PathLike[str]) -> bool:
    """Swap the existing paths ``a`` and ``b`` atomically: no process sees either one missing.

    Returns
    -------
    bool
        False, having changed nothing, where the system or the filesystem cannot.

    Raises
    ------
    OSError
        The swap failed for another reason (a path missing, another filesystem, ...).
    """
    code = _renameat2(a, b, _RENAME_EXCHANGE)
    if code in _UNSUPPORTED:
        return False
    if code:
        raise _error(code, a, b)
    return True


def rename_noreplace(src: os.PathLike[str], dst: os.PathLike[str]) -> None:
    """Rename ``src`` to ``dst``, which must not exist; atomically so where ``renameat2`` is
    available, else by ``os.rename`` after a check (a race may then replace an empty directory).

    Raises
    ------
    FileExistsError
        ``dst`` exists (nothing is changed).
    OSError
        The rename failed for another reason.
    """
    code = _renameat2(src, dst, _RENAME_NOREPLACE)
    if code in _UNSUPPORTED:
        if os.path.lexists(dst):
            raise _error(errno.EEXIST, src, dst)
        try:
            os.rename(src, dst)
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY:
                raise
            raise _error(errno.EEXIST, src, dst) from None
    elif code:
        raise _error(code, src, dst)
