"""Corpus files for the command line and the shards' directories read back, for the tests of
a sharded index driven through its doors (the CLI, the server)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from live_oracle import live_documents

from hybrid_engine import HybridIndex


def write_jsonl(path: Path, docs: list[dict[str, Any]]) -> Path:
    """``docs`` as a JSON-lines corpus file at ``path``."""
    path.write_text("".join(json.dumps(doc) + "\n" for doc in docs), encoding="utf-8")
    return path


def shard_texts(root: Path) -> list[dict[str, str]]:
    """Each shard's live documents (``_id`` to text), read by loading its directory alone."""
    shards = sorted(p for p in root.iterdir() if p.name.startswith("shard-"))
    out = []
    for shard in shards:
        with HybridIndex.load(shard) as engine:
            out.append({doc["_id"]: doc["text"] for doc in live_documents(engine)})
    return out
