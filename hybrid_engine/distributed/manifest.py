"""The directory of a sharded index: ``sharded.json``, one live index directory per shard, and
the record of its last commit, ``decided.json`` (``transactions``).

Version 2 commits atomically across shards (``transactions``); version 1 (every shard at its
own last commit) still opens, and is marked version 2 then, so that a release that does not
know the transactions' files never opens it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_engine.errors import IndexFormatError
from hybrid_engine.storage._files import fsync

FORMAT = "hybrid_engine.sharded"
VERSION = 2
OLDER_VERSIONS = (1,)
MANIFEST = "sharded.json"


def shard_dir(root: Path, shard: int) -> Path:
    return root / f"shard-{shard:03d}"


@dataclass(frozen=True)
class ShardedLayout:
    """What ``sharded.json`` records: the shard count and the shards' build options."""

    n_shards: int
    build_options: dict[str, Any]
    version: int = VERSION

    def write(self, root: Path) -> None:
        """Write ``sharded.json`` under ``root`` (created) through a temporary file renamed
        into place, both fsynced."""
        root.mkdir(parents=True, exist_ok=True)
        body = {
            "format": FORMAT,
            "version": self.version,
            "n_shards": self.n_shards,
            "build_options": self.build_options,
        }
        temporary = root / f".{MANIFEST}.tmp"
        temporary.write_text(json.dumps(body, indent=2, sort_keys=True), encoding="utf-8")
        fsync(temporary)
        os.replace(temporary, root / MANIFEST)
        fsync(root)

    @classmethod
    def read(cls, root: Path) -> ShardedLayout:
        """Read ``root/sharded.json``.

        Raises
        ------
        IndexFormatError
            No such file, or not a sharded index of this version.
        """
        try:
            body = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise IndexFormatError(
                f"{root} is not a sharded index (no {MANIFEST}); build one with "
                "ShardedIndex.build(corpus, path)"
            ) from None
        except (OSError, ValueError) as exc:
            raise IndexFormatError(f"{root / MANIFEST} is unreadable ({exc})") from None
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise IndexFormatError(f"{root / MANIFEST} is not a {FORMAT} manifest")
        version = body.get("version")
        if version != VERSION and version not in OLDER_VERSIONS:
            raise IndexFormatError(
                f"{root} is a sharded index of version {version!r}; this version reads "
                f"{', '.join(map(str, OLDER_VERSIONS))} and {VERSION}: rebuild it with "
                "ShardedIndex.build"
            )
        n_shards, options = body.get("n_shards"), body.get("build_options")
        if isinstance(n_shards, bool) or not isinstance(n_shards, int) or n_shards < 1:
            raise IndexFormatError(f"{root / MANIFEST}: n_shards is {n_shards!r}")
        if not isinstance(options, dict):
            raise IndexFormatError(f"{root / MANIFEST}: build_options is {options!r}")
        return cls(n_shards, options, version)
