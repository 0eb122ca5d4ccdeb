"""How much room a directory takes on disk: what ``hybrid-engine info`` and ``GET /stats``
report of an index."""

from __future__ import annotations

import os
from pathlib import Path


def disk_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (symbolic links not followed; 0 when it is
    missing); files removed while walking (by a merge or a clean-up meanwhile) are left
    out."""
    total = 0
    for parent, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(parent, name)).st_size
            except FileNotFoundError:
                continue
    return total
