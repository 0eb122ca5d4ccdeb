"""Which errors a user can cause (a bad argument, file or index), and how one is printed:
one line by default, the traceback with ``--debug``; every other error is a bug and raises."""

from __future__ import annotations

from hybrid_engine.errors import HybridEngineError

USER_ERRORS = (HybridEngineError, ValueError, TypeError, OSError)
"""What the commands raise on bad input: the engine's errors (a bad index, a locked one, an
unknown id, a model not prepared), bad values (a bad dataset's ``DatasetError`` among them)
and files; ``is_user_error`` narrows ``OSError``."""


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` is about what the user gave: one of ``USER_ERRORS``, where an
    ``OSError`` that is not the engine's counts only when it names a file (not found, not
    permitted, a folder...) or is a ``FileExistsError`` (an output that exists)."""
    if isinstance(exc, HybridEngineError):
        return True
    if isinstance(exc, OSError):
        return exc.filename is not None or isinstance(exc, FileExistsError)
    return isinstance(exc, USER_ERRORS)


def error_message(exc: BaseException) -> str:
    """The one line shown: an ``OSError`` naming a file as ``FILE: what went wrong``, else
    ``str(exc)`` (an ``UnknownIdError``'s is its message, without quotes)."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)
