"""Index directories on disk: a versioned manifest beside ``.npy`` arrays (``index_dir``),
replaced atomically and read one version at a time (``replace``)."""

from hybrid_engine.storage._files import MANIFEST
from hybrid_engine.storage.index_dir import (
    MMAP_MODES,
    check_mmap,
    delimits,
    in_memory_except,
    read_index_dir,
    user_cache_dir,
    verify_default,
    write_index_dir,
)
from hybrid_engine.storage.replace import open_index_dir, remove_unused_slots

__all__ = [
    "MANIFEST",
    "MMAP_MODES",
    "check_mmap",
    "delimits",
    "in_memory_except",
    "open_index_dir",
    "read_index_dir",
    "remove_unused_slots",
    "user_cache_dir",
    "verify_default",
    "write_index_dir",
]
