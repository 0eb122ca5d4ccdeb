"""storage's component files (non-array files beside the arrays, e.g. an hnswlib graph): named
plainly, written by the caller inside the atomic save, listed with their sha256 and size, and
always verified on read."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from hybrid_engine import IndexFormatError, storage


def write_with(path: Path, components) -> None:
    storage.write_index_dir(path, "test.fmt", 1, {}, {"a": np.arange(3)}, components)


@pytest.mark.parametrize("name", ["x.npy", "manifest.json", "sub/x", "../x", ""])
def test_component_names_are_plain_non_array_names(tmp_path, name: str) -> None:
    with pytest.raises(ValueError, match="must be a plain file name"):
        write_with(tmp_path / "idx", {name: lambda file: file.write_bytes(b"x")})
    assert list(tmp_path.iterdir()) == []


def test_component_writer_must_create_its_file(tmp_path) -> None:
    with pytest.raises(ValueError, match="the writer of component 'blob' created no file"):
        write_with(tmp_path / "idx", {"blob": lambda file: None})
    assert list(tmp_path.iterdir()) == []


def test_components_roundtrip_and_are_always_verified(tmp_path) -> None:
    write_with(tmp_path / "idx", {"blob.bin": lambda file: file.write_bytes(b"payload")})
    manifest, arrays = storage.read_index_dir(
        tmp_path / "idx", "test.fmt", 1, components=("blob.bin",)
    )
    assert manifest["files"]["blob.bin"] == {
        "sha256": hashlib.sha256(b"payload").hexdigest(),
        "bytes": 7,
    }
    assert list(arrays) == ["a"] and (tmp_path / "idx" / "blob.bin").read_bytes() == b"payload"
    (tmp_path / "idx" / "blob.bin").write_bytes(b"PAYLOAD")
    with pytest.raises(IndexFormatError, match=r"blob.bin fails its sha256 check"):
        storage.read_index_dir(
            tmp_path / "idx", "test.fmt", 1, verify=False, components=("blob.bin",)
        )
    with pytest.raises(IndexFormatError, match=r"names an unexpected file 'blob.bin'"):
        storage.read_index_dir(tmp_path / "idx", "test.fmt", 1)


def test_failing_component_writer_leaves_nothing(tmp_path) -> None:
    def fail(file: Path) -> None:
        file.write_bytes(b"half")
        raise OSError("disk full (simulated)")

    with pytest.raises(OSError, match="simulated"):
        write_with(tmp_path / "idx", {"blob": fail})
    assert list(tmp_path.iterdir()) == []
