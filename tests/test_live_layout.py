"""The names of a live index directory's entries (``live.layout``): each name the writer makes
is one of its kind, and near misses (another kind, digit counts, suffixes) are none.

The expected names are spelled out as the layout documents them, not built by the module."""

from __future__ import annotations

import pytest

from hybrid_engine.live import layout

DIRECTORIES = ["seg-000003", "seg-1234567", ".seg-000003.old-k2j_3x9q"]
FILES = [
    "commit-00000007.json",
    "seg-000003.del-00000007.npy",
    ".seg-000003.del-00000007.npy.tmp",
    ".commit-00000007.json.tmp",
]
NEITHER = [
    "write.lock",  # the lock is the layout's, but never a leftover
    "seg-00003",  # five digits
    "commit-0000007.json",
    "commit-00000007.json\n",
    "commit-00000007.json.tmp",  # a temporary file starts with a dot
    ".seg-000003.old-a.b",  # a slot of the index "seg-000003.old-a"
    ".seg-000003.old-",
    "seg-000003.del-00000007.npy.tmp",
    ".seg-000003.tmp",
    "notes.txt",
]


def test_the_names_the_writer_makes_are_spelled_as_documented() -> None:
    assert layout.segment_name(3) == "seg-000003"
    assert layout.segment_name(1234567) == "seg-1234567"
    assert layout.commit_point_name(7) == "commit-00000007.json"
    assert layout.mask_name("seg-000003", 7) == "seg-000003.del-00000007.npy"
    assert layout.temporary_name("commit-00000007.json") == ".commit-00000007.json.tmp"


@pytest.mark.parametrize("name", DIRECTORIES)
def test_directories_are_of_the_layout_as_directories_only(name: str) -> None:
    assert layout.is_entry(name, directory=True)
    assert not layout.is_entry(name, directory=False)


@pytest.mark.parametrize("name", FILES)
def test_files_are_of_the_layout_as_files_only(name: str) -> None:
    assert layout.is_entry(name, directory=False)
    assert not layout.is_entry(name, directory=True)


@pytest.mark.parametrize("name", NEITHER)
def test_near_misses_are_not_of_the_layout(name: str) -> None:
    assert not layout.is_entry(name, directory=False)
    assert not layout.is_entry(name, directory=True)


def test_a_commit_point_names_its_generation() -> None:
    match = layout.COMMIT_POINT.fullmatch("commit-00000042.json")
    assert match is not None and int(match.group(1)) == 42
    assert layout.COMMIT_POINT.fullmatch(".commit-00000042.json.tmp") is None
