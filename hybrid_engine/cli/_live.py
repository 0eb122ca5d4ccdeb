"""What ``add`` and ``delete`` share: ``-`` for stdin, the write lock and the one line they
print (their index arguments: ``_options.add_index_arguments``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.errors import WriterLockedError

STDIN = "-"
"""The file argument that reads standard input (``add``'s ``FILE``, ``delete --ids-file``)."""


@contextmanager
def writing(engine: HybridIndex) -> Iterator[HybridIndex]:
    """``with engine:`` for a command that changes the index: its write lock given back at
    the end, and another writer's lock reported in the command line's words."""
    with engine:
        try:
            yield engine
        except WriterLockedError:
            raise WriterLockedError(
                f"another writer holds the write lock of {engine.path} (a running "
                "`hybrid-engine serve`, or another add or delete): one writer at a time may "
                "change an index; stop it, or send the change to it (the server's "
                "POST /documents)"
            ) from None


def summary(done: str, engine: HybridIndex) -> str:
    """``"<done> -> INDEX: N documents in S segment(s)"``, after the commit."""
    return f"{done} -> {engine.path}: {len(engine)} documents in {engine.num_segments} segment(s)"
