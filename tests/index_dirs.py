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


def as_dense_format_1(path: Path) -> Path:
    """Rewrite the saved dense index at ``path`` (float32, with a graph) as format 1 wrote it:
    the graph as hnswlib's file ``graph.hnsw`` (its nodes in position order), no link arrays,
    the parameters of format 1. Returns ``path``."""
    from hybrid_engine import DenseIndex

    index = DenseIndex.load(path)
    graph = index._store.graph
    assert graph is not None and index.quantization is None
    graph.to_hnswlib(index.vectors, index.m, index.ef_construction).save_index(
        str(path / "graph.hnsw")
    )
    manifest = json.loads((path / "manifest.json").read_text())
    for name in ("links0", "upper", "upper_start"):
        (path / f"{name}.npy").unlink()
        del manifest["files"][f"{name}.npy"]
    manifest["files"]["graph.hnsw"] = {}
    manifest["format_version"] = 1
    del manifest["graph"], manifest["params"]["quantization"], manifest["params"]["oversample"]
    (path / "manifest.json").write_text(json.dumps(manifest))
    fix_checksums(path)
    return path
