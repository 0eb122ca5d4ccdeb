"""The exception and warning types of the package, all exported by ``hybrid_engine``.

Every error hybrid_engine raises itself derives from ``HybridEngineError`` and from the
built-in type a caller would catch for it (``ValueError``, ``KeyError``, ``RuntimeError``,
``FileNotFoundError``); every warning derives from ``UserWarning``, except that an old module
path warns with the built-in ``DeprecationWarning`` (``_moved``). The modules they were
first defined in still export them."""

from __future__ import annotations

from typing import Any


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


class ModelNotFoundError(HybridEngineError, FileNotFoundError):
    """A prepared model folder (or one of its variants) is missing.

    The message names the folder that was looked up and the command that prepares it.
    """


class DatasetError(HybridEngineError, ValueError):
    """A dataset folder or file is missing or malformed; the message names the file and line."""


class EncoderRefusedError(HybridEngineError):
    """The validation gate refused the fine-tuned bi-encoder, so it was not prepared.

    Attributes
    ----------
    verdict : EncoderVerdict
        The gate's figures (``evaluation.encoder_gate.EncoderVerdict``; typed ``Any`` here,
        so that this module imports nothing of the package).
    """

    def __init__(self, message: str, verdict: Any) -> None:
        super().__init__(message)
        self.verdict = verdict


class ShardUnavailableError(HybridEngineError, RuntimeError):
    """A shard did not answer (its actor died, is restarting or timed out) where every shard
    must: a write, a commit, or a search with ``strict=True``."""


class UnpreparedGenerationError(HybridEngineError, LookupError):
    """A shard was asked for a generation it has not prepared (it restarted since, or the
    generation is older than those it keeps). Raised by a shard's actor to its coordinator,
    which prepares the shard and asks again: a search's caller does not see it."""


class BatcherFullError(HybridEngineError, RuntimeError):
    """More queries wait than the batcher's ``max_queued``: the server is overloaded."""


# -- warnings --------------------------------------------------------------------------------------


class DegradedWarning(UserWarning):
    """A stage failed, or its model could not be loaded, and the engine serves without it:
    the other legs' fused ranking (a failed leg), the fused ranking (a failed reranker).

    Issued once per engine and stage; every search served so says it in
    ``HybridResult.degraded``, and ``HybridIndex.degradations`` counts them.
    """


class RerankerRefusedWarning(UserWarning):
    """A cross-encoder failed its validation gate; the engine serves the fused ranking."""


class RefusedModelWarning(UserWarning):
    """The bi-encoder loaded is one whose training gate refused it (prepared with ``--force``):
    on its validation queries it did not beat the model it was fine-tuned from."""


class Int8DroppedWarning(UserWarning):
    """The int8 variant disagreed with the fp32 graph, so the prepared folder has none."""


class SelfQueryWarning(UserWarning):
    """A generated filter was invalid and dropped; the query ran without it."""
