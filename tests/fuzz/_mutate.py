"""Structurally hostile edits of a saved index directory, with checksums recomputed so that
the edit gets past the checksum checks to the structure checks behind them.

``mutate`` applies one to three edits, each picked by the fuzzer: an array element set to a
boundary value, two elements swapped (offsets out of order), the array cast to another dtype,
reshaped, cut short, extended, emptied, made 0-d, byte-swapped or pickled; a JSON entry
replaced by a hostile value (huge or negative counts, wrong types, paths) or removed; bytes
of any file overwritten; a file removed. Then ``fix_checksums`` makes every manifest and
commit point agree with the files again (usually; sometimes it is left undone).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import atheris
import numpy as np

from hybrid_engine.storage._files import NPY_ERRORS

HOSTILE: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    1,
    -1,
    2,
    3,
    255,
    256,
    2**31 - 1,
    2**31,
    2**32,
    2**53,
    2**63 - 1,
    2**63,
    2**64,
    10**30,
    -(2**63),
    0.5,
    -0.0,
    1e308,
    "",
    "x",
    "positions",
    "explicit",
    "../outside",
    "/etc/passwd",
    "manifest.json",
    [],
    [0],
    {},
    {"x": 1},
    "\x00",
    "é",
)
"""JSON values an entry may be replaced with."""
DTYPES = ("<i8", "<i4", "<u4", "u1", "i1", "<f4", "<f8", "?", ">i8", ">i4", "<U2", "<i2")
BOUNDARY = (0, 1, -1, 2, 127, 128, 255, 2**31 - 1, -(2**31), 2**32 - 1, 2**63 - 1, -(2**63))


def pristine_copy(source: Path, target: Path) -> Path:
    """A fresh copy of the saved index ``source`` at ``target`` (replaced if present)."""
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, symlinks=True)
    return target


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name != "write.lock")


def _set(array: np.ndarray, fdp: atheris.FuzzedDataProvider) -> np.ndarray:
    out = np.array(array)
    if out.size == 0:
        return out
    flat = out.reshape(-1)
    value = fdp.PickValueInList(list(BOUNDARY)) if fdp.ConsumeBool() else fdp.ConsumeInt(8)
    if fdp.ConsumeBool():
        value += (
            int(flat[fdp.ConsumeIntInRange(0, flat.size - 1)]) if out.dtype.kind in "iub" else 0
        )
    with np.errstate(all="ignore"):
        flat[fdp.ConsumeIntInRange(0, flat.size - 1)] = np.array(value).astype(out.dtype)
    return out


def _edit_array(array: np.ndarray, fdp: atheris.FuzzedDataProvider) -> Any:
    """An edited copy of ``array`` (or None to write raw bytes instead)."""
    op = fdp.ConsumeIntInRange(0, 11)
    with np.errstate(all="ignore"):
        if op <= 2:
            return _set(array, fdp)
        if op == 3 and array.size >= 2:
            out = np.array(array).reshape(-1)
            i, j = fdp.ConsumeIntInRange(0, out.size - 1), fdp.ConsumeIntInRange(0, out.size - 1)
            out[[i, j]] = out[[j, i]]
            return out.reshape(array.shape)
        if op == 4:
            return array.astype(fdp.PickValueInList(list(DTYPES)))
        if op == 5:
            if array.size % 2 == 0 and array.size:
                return array.reshape(2, -1) if fdp.ConsumeBool() else array.reshape(-1, 2).T
            return array.reshape(1, *array.shape)
        if op == 6:
            return (
                array[: fdp.ConsumeIntInRange(0, max(len(array) - 1, 0))] if array.ndim else array
            )
        if op == 7:
            extra = np.resize(array, (fdp.ConsumeIntInRange(1, 4), *array.shape[1:]))
            return np.concatenate([array, extra]) if array.ndim else extra
        if op == 8:
            return array.reshape(-1)[:1].reshape(()) if array.size else np.zeros((), array.dtype)
        if op == 9:
            return array[::-1].copy() if array.ndim else array
        if op == 10:
            return np.array(array.tolist(), dtype=object)
    return None


def _edit_npy(file: Path, fdp: atheris.FuzzedDataProvider) -> None:
    try:
        array = np.load(file, allow_pickle=False)
    except NPY_ERRORS:  # an earlier edit broke the header: edit its bytes instead
        _edit_bytes(file, fdp)
        return
    edited = _edit_array(array, fdp)
    if edited is None:
        _edit_bytes(file, fdp)
        return
    with open(file, "wb") as f:
        np.save(f, edited, allow_pickle=True)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path inside a JSON value."""
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += _paths(item, (*prefix, i))
    return out


def _edit_json(file: Path, fdp: atheris.FuzzedDataProvider) -> None:
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except ValueError:
        _edit_bytes(file, fdp)
        return
    paths = _paths(document)
    path = paths[fdp.ConsumeIntInRange(0, len(paths) - 1)]
    op = fdp.ConsumeIntInRange(0, 5)
    if op == 5 or not path:
        _edit_bytes(file, fdp)
        return
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if op == 0 and isinstance(parent, dict):
        del parent[path[-1]]
    elif op == 1 and isinstance(parent, dict):
        parent[fdp.PickValueInList(["extra", "files", "format", "0"])] = fdp.PickValueInList(
            list(HOSTILE)
        )
    elif op == 2 and isinstance(parent[path[-1]], int) and not isinstance(parent[path[-1]], bool):
        parent[path[-1]] += fdp.ConsumeIntInRange(-3, 3)
    else:
        parent[path[-1]] = fdp.PickValueInList(list(HOSTILE))
    file.write_text(json.dumps(document), encoding="utf-8")


def _edit_bytes(file: Path, fdp: atheris.FuzzedDataProvider) -> None:
    data = bytearray(file.read_bytes())
    op = fdp.ConsumeIntInRange(0, 3)
    if op == 0 and data:
        for _ in range(fdp.ConsumeIntInRange(1, 8)):
            data[fdp.ConsumeIntInRange(0, len(data) - 1)] = fdp.ConsumeIntInRange(0, 255)
    elif op == 1 and len(data) >= 4:
        at = fdp.ConsumeIntInRange(0, len(data) // 4 - 1) * 4
        data[at : at + 4] = fdp.ConsumeIntInRange(0, 2**32 - 1).to_bytes(4, "little")
    elif op == 2:
        del data[fdp.ConsumeIntInRange(0, len(data)) :]
    else:
        data = bytearray(fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 512)))
    file.write_bytes(bytes(data))


def mutate(root: Path, fdp: atheris.FuzzedDataProvider) -> None:
    """Apply one to three fuzzed edits to the index directory ``root``, then (7 times in 8)
    recompute its checksums."""
    for _ in range(fdp.ConsumeIntInRange(1, 3)):
        files = _files(root)
        if not files:
            break
        file = files[fdp.ConsumeIntInRange(0, len(files) - 1)]
        if fdp.ConsumeIntInRange(0, 30) == 0:
            file.unlink()
        elif file.suffix == ".npy":
            _edit_npy(file, fdp)
        elif file.suffix == ".json":
            _edit_json(file, fdp)
        else:
            _edit_bytes(file, fdp)
    if fdp.ConsumeIntInRange(0, 7):
        fix_checksums(root)


def fix_checksums(root: Path) -> None:
    """Make every file size and sha256 that a manifest or commit point records match the file
    as it is now, where the entry is still a dict naming a present file."""
    for manifest in root.rglob("manifest.json"):
        try:
            document = json.loads(manifest.read_text(encoding="utf-8"))
        except ValueError:
            continue
        files = document.get("files") if isinstance(document, dict) else None
        if not isinstance(files, dict):
            continue
        for name, info in files.items():
            file = manifest.parent / str(name)
            if isinstance(info, dict) and file.is_file():
                data = file.read_bytes()
                info.update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
        manifest.write_text(json.dumps(document), encoding="utf-8")
    for commit in root.glob("commit-*.json"):
        try:
            document = json.loads(commit.read_text(encoding="utf-8"))
        except ValueError:
            continue
        segments = document.get("segments") if isinstance(document, dict) else None
        if not isinstance(segments, list):
            continue
        for entry in segments:
            if isinstance(entry, dict) and isinstance(entry.get("deletes"), str):
                file = root / entry["deletes"]
                if file.is_file():
                    entry["deletes_sha256"] = hashlib.sha256(file.read_bytes()).hexdigest()
        commit.write_text(json.dumps(document), encoding="utf-8")
