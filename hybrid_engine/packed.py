"""Strings packed as UTF-8 bytes plus offsets: the document ids of every index and the texts an
engine keeps for reranking."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import overload

import numpy as np

from hybrid_engine.storage import delimits


def pack_utf8(strings: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """``strings`` as one uint8 array of their UTF-8 bytes and int64 offsets (``len + 1``).

    Lone surrogates survive (``surrogatepass``), so every ``str`` round-trips.
    """
    encoded = [s.encode("utf-8", "surrogatepass") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets


def checked_position(position: int, count: int, noun: str) -> int:
    """``position`` of a sequence of ``count`` items (negative from the end) as an index in
    ``[0, count)``; IndexError naming the ``noun`` of the items otherwise."""
    index = int(position)
    if index < 0:
        index += count
    if not 0 <= index < count:
        raise IndexError(f"position {position} out of range for {count} {noun}")
    return index


class PackedStrings(Sequence[str]):
    """Strings by position, packed (``pack_utf8``) and decoded on access.

    Build with ``from_strings``, or from saved arrays with ``from_arrays``. Read-only, so
    thread-safe. Saved as two arrays, ``<prefix>_bytes`` (uint8) and ``<prefix>_offsets``
    (int64).
    """

    def __init__(self, data: np.ndarray, offsets: np.ndarray) -> None:
        """Private: use ``from_strings`` or ``from_arrays``."""
        self._data = data
        self._offsets = offsets

    @classmethod
    def from_strings(cls, strings: Sequence[str]) -> PackedStrings:
        """Pack ``strings`` (each a ``str``)."""
        return cls(*pack_utf8(strings))

    @classmethod
    def from_arrays(
        cls, arrays: Mapping[str, np.ndarray], count: int, prefix: str
    ) -> PackedStrings:
        """The strings saved as ``arrays(prefix)``, which must hold ``count`` of them.

        Raises
        ------
        ValueError
            The arrays are missing, of the wrong dtype, or their offsets do not cut the bytes
            into ``count`` strings.
        """
        data, offsets = arrays.get(f"{prefix}_bytes"), arrays.get(f"{prefix}_offsets")
        if (
            data is None
            or offsets is None
            or (data.dtype, offsets.dtype, data.ndim, offsets.ndim) != (np.uint8, np.int64, 1, 1)
            or not delimits(offsets, data, count)
        ):
            raise ValueError(f"{prefix}_bytes and {prefix}_offsets do not hold {count} strings")
        return cls(data, offsets)

    def concat(self, other: PackedStrings) -> PackedStrings:
        """These strings followed by ``other``'s."""
        ends = self._offsets[-1] + other._offsets[1:]
        return PackedStrings(
            np.concatenate([self._data, other._data]), np.concatenate([self._offsets, ends])
        )

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """``<prefix>_bytes`` (uint8) and ``<prefix>_offsets`` (int64), to save."""
        return {f"{prefix}_bytes": self._data, f"{prefix}_offsets": self._offsets}

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, position: int) -> str: ...
    @overload
    def __getitem__(self, position: slice) -> list[str]: ...
    def __getitem__(self, position: int | slice) -> str | list[str]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        position = checked_position(position, len(self), "strings")
        start, end = self._offsets[position], self._offsets[position + 1]
        return bytes(self._data[start:end]).decode("utf-8", "surrogatepass")
