"""``hybrid-engine info INDEX``: what a saved index holds, read from its last commit point
and its files, without loading a model."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from hybrid_engine.cli._sharded import is_sharded
from hybrid_engine.distributed.manifest import ShardedLayout, shard_dir
from hybrid_engine.distributed.transactions import read_decided
from hybrid_engine.live import layout
from hybrid_engine.live.commits import lock_if_free, read_commit
from hybrid_engine.storage.usage import disk_bytes

LEGS = ("bm25", "dense", "splade")
"""The legs' folders in a segment directory."""


def add_parser(subparsers: Any) -> None:
    """Add ``info`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser(
        "info", help="what a saved index holds: documents, segments, legs, models, sizes"
    )
    p.add_argument("index", help="index directory")
    p.add_argument(
        "--json",
        action="store_true",
        help="one JSON object: the fields of the listing (sizes in bytes)",
    )
    p.set_defaults(func=run)


def describe(path: Path) -> dict[str, Any]:
    """The facts ``info`` prints, as a JSON-able dict.

    Raises
    ------
    IndexFormatError
        ``path`` holds no live index (``live.commits.read_commit``).
    """
    point = read_commit(path)
    stored = sum(entry.num_documents for entry in point.segments)
    deleted = sum(entry.num_deleted for entry in point.segments)
    sizes = {leg: 0 for leg in point.config["retrievers"]}
    for entry in point.segments:
        for leg in sizes:
            sizes[leg] += disk_bytes(path / entry.name / leg)
    total = disk_bytes(path)
    return {
        "path": str(path),
        "documents": stored - deleted,
        "deleted": deleted,
        "segments": len(point.segments),
        "generation": point.generation,
        "retrievers": list(point.config["retrievers"]),
        "models": point.config.get("models", {}),
        "phrases": bool(point.config.get("bm25", {}).get("positions", False)),
        "bytes": {"total": total, **sizes, "documents": total - sum(sizes.values())},
        "writer_holds_lock": _writer_holds_lock(path),
    }


def describe_sharded(path: Path) -> dict[str, Any]:
    """The facts ``info`` prints of a sharded index: its shards' facts (``describe``: each as
    its last applied commit) summed, and each shard's.

    Raises
    ------
    IndexFormatError
        ``path`` holds no sharded index of this version, or a shard no live index.
    """
    shards = [describe(shard_dir(path, s)) for s in range(ShardedLayout.read(path).n_shards)]
    return {
        "path": str(path),
        "shards": len(shards),
        "documents": sum(shard["documents"] for shard in shards),
        "deleted": sum(shard["deleted"] for shard in shards),
        "decided_transaction": read_decided(path),
        "retrievers": shards[0]["retrievers"],
        "models": shards[0]["models"],
        "phrases": shards[0]["phrases"],
        "bytes": {"total": disk_bytes(path)},
        "per_shard": [
            {key: shard[key] for key in ("documents", "deleted", "segments", "generation")}
            for shard in shards
        ],
    }


def run(args: argparse.Namespace) -> int:
    """Print the listing, or the JSON object with ``--json``."""
    path = Path(args.index)
    if is_sharded(path):
        return _print_sharded(describe_sharded(path), args.json)
    facts = describe(path)
    if args.json:
        print(json.dumps(facts, ensure_ascii=False))
        return 0
    deleted = facts["deleted"]
    pending = f" ({deleted} deleted, their space freed by a merge)" if deleted else ""
    models = _models(facts["models"])
    sizes = facts["bytes"]
    parts = ", ".join(f"{part} {_shown(size)}" for part, size in sizes.items() if part != "total")
    writer = (
        "a writer holds the write lock (its staged changes are in its process: a server "
        "shows them at GET /stats)"
        if facts["writer_holds_lock"]
        else "none (the write lock is free)"
    )
    print(f"index:       {facts['path']}")
    print(f"documents:   {facts['documents']}{pending}")
    print(f"segments:    {facts['segments']}")
    print(f"generation:  {facts['generation']}")
    print(f"retrievers:  {', '.join(facts['retrievers'])}")
    print(f"models:      {models or 'none (BM25 needs no model)'}")
    if "bm25" in facts["retrievers"]:
        phrases = "on (positions recorded)" if facts["phrases"] else "off (index --positions)"
        print(f"phrases:     {phrases}")
    print(f"on disk:     {_shown(sizes['total'])} ({parts})")
    print(f"writer:      {writer}")
    return 0


def _print_sharded(facts: dict[str, Any], as_json: bool) -> int:
    """``run``'s listing of a sharded index."""
    if as_json:
        print(json.dumps(facts, ensure_ascii=False))
        return 0
    models = _models(facts["models"])
    print(f"index:       {facts['path']} (sharded)")
    print(f"documents:   {facts['documents']} ({facts['deleted']} deleted)")
    print(f"shards:      {facts['shards']}")
    for s, shard in enumerate(facts["per_shard"]):
        print(
            f"  shard {s}:   {shard['documents']} documents, {shard['segments']} segment(s), "
            f"generation {shard['generation']}"
        )
    print(f"decided:     transaction {facts['decided_transaction']}")
    print(f"retrievers:  {', '.join(facts['retrievers'])}")
    print(f"models:      {models or 'none (BM25 needs no model)'}")
    print(f"on disk:     {_shown(facts['bytes']['total'])}")
    return 0


def _models(models: dict[str, dict[str, Any]]) -> str:
    """``"dense all-MiniLM-L6-v2 (int8)"``: each leg's model and variant."""
    return ", ".join(
        f"{leg} {model.get('name')} ({model.get('variant')})" for leg, model in models.items()
    )


def _shown(size: int) -> str:
    """``size`` bytes in B, KiB, MiB or GiB, e.g. ``"3.2 MiB"``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def _writer_holds_lock(path: Path) -> bool:
    """Whether a writer (an engine that staged a change, ``serve`` after a write, ``add``)
    holds the index's write lock now; probed without waiting."""
    if not (path / layout.LOCK).exists():
        return False
    with lock_if_free(path) as free:
        return not free
