"""The names of the entries of a live index directory, each pattern defined once: the writer
names its entries by them (``commits``), and the tidying of what interrupted writes left
recognises them by them (``leftovers``). What each entry holds: ``commits``.

================================  =====================================================
``commit-00000007.json``          a commit point, of generation 7 (``COMMIT_POINT``)
``seg-000003/``                   a segment directory (``SEGMENT``)
``.seg-000003.old-XXXXXXXX/``     a slot a save of a segment is written in
                                  (``SEGMENT_SLOT``, ``storage.replace``)
``seg-000003.del-00000007.npy``   a segment's deletion mask at commit 7 (``MASK``)
``.NAME.tmp``                     a commit point or mask being written (``TEMPORARY``)
``write.lock``                    the writer's lock file (``LOCK``)
================================  =====================================================

The patterns match whole names (``re.fullmatch``).
"""

from __future__ import annotations

import re

from hybrid_engine.storage.replace import SLOT_SUFFIX

LOCK = "write.lock"

_SEGMENT = r"seg-\d{6,}"
_GENERATION = r"\d{8}"

COMMIT_POINT = re.compile(rf"commit-({_GENERATION})\.json")
"""A commit point; its group is the generation."""
SEGMENT = re.compile(_SEGMENT)
SEGMENT_SLOT = re.compile(rf"\.{_SEGMENT}{SLOT_SUFFIX}")
MASK = re.compile(rf"{_SEGMENT}\.del-{_GENERATION}\.npy")
TEMPORARY = re.compile(rf"\.(?:{COMMIT_POINT.pattern}|{MASK.pattern})\.tmp")

DIRECTORIES = (SEGMENT, SEGMENT_SLOT)
"""The directories a live index's writes make."""
FILES = (COMMIT_POINT, MASK, TEMPORARY)
"""The plain files a live index's writes make, but the lock."""


def commit_point_name(generation: int) -> str:
    """The name of the commit point of ``generation`` (``COMMIT_POINT``)."""
    return f"commit-{generation:08d}.json"


def segment_name(number: int) -> str:
    """The name of segment ``number``'s directory (``SEGMENT``)."""
    return f"seg-{number:06d}"


def mask_name(segment: str, generation: int) -> str:
    """The name of segment ``segment``'s deletion mask at commit ``generation`` (``MASK``)."""
    return f"{segment}.del-{generation:08d}.npy"


def temporary_name(name: str) -> str:
    """The name of the temporary file that entry ``name`` is written to first
    (``TEMPORARY``)."""
    return f".{name}.tmp"


def is_entry(name: str, *, directory: bool) -> bool:
    """Whether ``name`` is the name of a directory (``directory``) or a plain file of the
    layout (the lock left out)."""
    return any(p.fullmatch(name) for p in (DIRECTORIES if directory else FILES))
