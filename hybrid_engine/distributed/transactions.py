"""Atomic commits across shards: two phases, decided by one durable record.

A sharded commit is transaction ``T`` (1, 2, ... over the life of the index):

1. **prepare**: every shard writes the changes it staged for ``T`` to its prepared file,
   ``shard-NNN.txn-<T>.jsonl`` beside its directory (written whole, fsynced, renamed into
   place). Nothing is visible yet; a shard that cannot prepare aborts ``T`` everywhere.
2. **decide**: the coordinator writes ``decided.json`` naming ``T`` (fsynced, renamed into
   place). This rename is the commit of the sharded index: before it ``T`` never happened,
   after it ``T`` happened on every shard, whatever dies next.
3. **apply**: every shard commits its staged changes (a shard that restarted since it
   prepared replays its prepared file first), then removes the file.
4. **publish**: searches move to the new commits of every shard together.

Recovery, when a sharded index opens (and when a shard restarted during step 3): a prepared
file of a decided transaction (``T <= decided``) is applied, one of an undecided transaction
is removed. A prepared file replays its additions as upserts and its deletions with
``missing_ok``: each change sets a document's state whatever it was, so replaying a
transaction over a shard that already committed it changes nothing, and a shard that died
after its commit but before removing the file is safe to replay.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hybrid_engine.errors import IndexFormatError
from hybrid_engine.storage._files import fsync

DECISION = "decided.json"
FORMAT = "hybrid_engine.sharded.decision"
_PREPARED = re.compile(r"\.txn-(\d{8})\.jsonl")

Change = tuple[str, list[Any]]
"""One staged change: ``("upsert", documents)`` (an ``add`` too) or ``("delete", ids)``."""


def read_decided(root: Path) -> int:
    """The last decided transaction of the sharded index at ``root`` (0: none yet).

    Raises
    ------
    IndexFormatError
        ``decided.json`` is unreadable or malformed.
    """
    try:
        body = json.loads((root / DECISION).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return 0
    except (OSError, ValueError) as exc:
        raise IndexFormatError(f"{root / DECISION} is unreadable ({exc})") from None
    fields = body if isinstance(body, dict) else {}
    txn = fields.get("transaction")
    if fields.get("format") != FORMAT or isinstance(txn, bool) or not isinstance(txn, int):
        raise IndexFormatError(f"{root / DECISION} is not a {FORMAT} record: {body!r}")
    return txn


def write_decided(root: Path, txn: int) -> None:
    """Decide transaction ``txn``: ``decided.json`` written to a temporary file, fsynced, and
    renamed into place, the directory fsynced after."""
    _write_atomically(root / DECISION, json.dumps({"format": FORMAT, "transaction": txn}))


def prepared_path(shard: Path, txn: int) -> Path:
    """The prepared file of transaction ``txn`` of the shard directory ``shard``."""
    return shard.with_name(f"{shard.name}.txn-{txn:08d}.jsonl")


def prepared_files(shard: Path) -> list[tuple[int, Path]]:
    """The prepared files of shard directory ``shard``, by transaction, ascending."""
    found = []
    with contextlib.suppress(FileNotFoundError):
        for name in os.listdir(shard.parent):
            if name.startswith(shard.name) and (m := _PREPARED.fullmatch(name[len(shard.name) :])):
                found.append((int(m.group(1)), shard.parent / name))
    return sorted(found)


def write_prepared(shard: Path, txn: int, changes: Sequence[Change]) -> None:
    """Write the staged ``changes`` of transaction ``txn`` durably (one JSON line each)."""
    lines = "".join(json.dumps([kind, values]) + "\n" for kind, values in changes)
    _write_atomically(prepared_path(shard, txn), lines)


def read_prepared(path: Path) -> list[Change]:
    """The changes of a prepared file, in order.

    Raises
    ------
    IndexFormatError
        A line that is not a change.
    """
    changes: list[Change] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            kind, values = json.loads(line)
            if kind not in ("upsert", "delete") or not isinstance(values, list):
                raise ValueError(f"{kind!r} change")
        except ValueError as exc:
            raise IndexFormatError(f"{path}, line {number}: not a staged change ({exc})") from None
        changes.append((kind, values))
    return changes


def remove_prepared(path: Path) -> None:
    """Remove a prepared file (gone already is fine), the directory fsynced after."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
        fsync(path.parent)


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)
    fsync(path.parent)
