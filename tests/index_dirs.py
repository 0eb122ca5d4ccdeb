"""Helpers of the save/load tests: copy a saved index directory, edit its manifest, replace an
array, and make the manifest's sizes and checksums agree again after a crafted change."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np


def copy_index(source: Path, target: Path) -> Path:
    """A fresh, writable copy of the index directory ``source`` at ``target``."""
    target.mkdir()
    for file in source.iterdir():
        (target / file.name).write_bytes(file.read_bytes())
    return target


def fix_checksums(path: Path) -> None:
    """Make every size and sha256 in the manifest match the files as they are now."""
    manifest = json.loads((path / "manifest.json").read_text())
    for name, info in manifest["files"].items():
        data = (path / name).read_bytes()
        info.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    (path / "manifest.json").write_text(json.dumps(manifest))


def edit_manifest(path: Path, **changes) -> None:
    """Set top-level manifest entries."""
    manifest = json.loads((path / "manifest.json").read_text())
    manifest.update(changes)
    (path / "manifest.json").write_text(json.dumps(manifest))


def rewrite(path: Path, name: str, array: np.ndarray, *, fix_manifest: bool = True) -> None:
    """Replace ``name.npy`` and (by default) make the manifest's size and sha256 agree."""
    np.save(path / f"{name}.npy", array, allow_pickle=True)
    if fix_manifest:
        fix_checksums(path)
