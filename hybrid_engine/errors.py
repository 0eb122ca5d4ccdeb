"""Exception types of the package."""


class HybridEngineError(Exception):
    """Base class of the errors that hybrid_engine raises itself."""


class IndexFormatError(HybridEngineError, ValueError):
    """An index directory is missing, truncated, corrupt, of another format or version.

    Raised by every ``load``; the message names the directory, the part at fault and what to
    do (usually: rebuild the index with this version of hybrid_engine).
    """


class DuplicateIdError(HybridEngineError, ValueError):
    """Documents to add carry an id that is already in the index (or staged), or the same id
    twice. Use ``upsert`` to replace documents, or give unique ids."""


class WriterLockedError(HybridEngineError, RuntimeError):
    """Another writer (an engine in this or another process) holds an index directory's write
    lock: one writer at a time may change it. Close the other one, or only search here."""


class UnknownIdError(HybridEngineError, KeyError):
    """Document ids that are not in the index (``delete``, ``get``); the message names them
    and how to skip them (``missing_ok=True``).

    A ``KeyError``, so ``except KeyError`` catches it; unlike a plain one, ``str()`` is the
    message itself, not its ``repr``.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StageError(HybridEngineError, RuntimeError):
    """A stage of a search failed: raised by ``HybridIndex.search(strict=True)`` (the stage's
    own error is its ``__cause__``), or when every leg failed and nothing is left to fuse.

    The message names the stage, the error and the fix.
    """


class PinnedEngineError(HybridEngineError, RuntimeError):
    """A change (``add``, ``commit``, ...) through an engine pinned to one commit
    (``HybridIndex.pinned``): write through the engine it was pinned from."""


class DegradedEngineError(HybridEngineError, RuntimeError):
    """A change (``add``, ``commit``, ...) of an engine loaded without a leg
    (``HybridIndex.load(allow_degraded=True)``): its new segments would lack the leg. Fix the
    model and load the index again to write."""
