"""Strings packed as UTF-8 bytes plus offsets: the document ids of every index and the texts an
engine keeps for reranking."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import overload

import numpy as np

from hybrid_engine.storage import delimits

LONG_STRING = 64
"""``PackedStrings.take`` decodes strings one at a time when they average more bytes than this
(texts): the byte-wise gather then costs more than a call per string."""
TAKE_BYTES = 1 << 22
"""``PackedStrings.take`` gathers and decodes at most about this many bytes at once, so its
scratch stays small whatever it reads (a string longer than this alone)."""


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


class StringSequence(Sequence[str]):
    """A read-only sequence of strings by position: ``self[i]`` of an int (negative from the
    end; IndexError naming ``NOUN`` out of range) is ``_at`` of its index, ``self[a:b]`` a
    list (``_slice``)."""

    NOUN = "strings"
    """What the items are called in an IndexError."""

    @overload
    def __getitem__(self, position: int) -> str: ...
    @overload
    def __getitem__(self, position: slice) -> list[str]: ...
    def __getitem__(self, position: int | slice) -> str | list[str]:
        if isinstance(position, slice):
            return self._slice(position)
        return self._at(checked_position(position, len(self), self.NOUN))

    def _at(self, index: int) -> str:
        """The string at ``index``, in ``[0, len(self))``."""
        raise NotImplementedError

    def _slice(self, positions: slice) -> list[str]:
        """The strings of a slice, in order."""
        return [self._at(i) for i in range(*positions.indices(len(self)))]


class PackedStrings(StringSequence):
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

    def take(self, positions: np.ndarray) -> list[str]:
        """The strings at ``positions`` (1-d int, each in ``[0, len(self))``), in that order.

        Short strings (ids; ``LONG_STRING``) are read in whole-array work: their bytes are
        gathered by numpy, joined by NUL bytes and decoded and split at once, with no Python
        call per string (a string holding a NUL is decoded on its own instead), about
        ``TAKE_BYTES`` at a time.
        """
        positions = np.asarray(positions, dtype=np.int64)
        if len(positions) == 0:
            return []
        if positions.min() < 0 or positions.max() >= len(self):
            raise IndexError(f"positions must lie in [0, {len(self)}) for {len(self)} strings")
        ends = np.cumsum(self._offsets[positions + 1] - self._offsets[positions])
        if ends[-1] > LONG_STRING * len(positions):  # long strings: copies outweigh the calls
            return [self[int(i)] for i in positions]
        strings: list[str] = []
        start = 0
        while start < len(positions):
            done = int(ends[start - 1]) if start else 0
            stop = int(np.searchsorted(ends, done + TAKE_BYTES, side="right"))
            strings += self._joined(positions[start : max(stop, start + 1)])
            start = max(stop, start + 1)
        return strings

    def _joined(self, positions: np.ndarray) -> list[str]:
        """``take`` of a few positions: one gather, one decode, one split."""
        starts = self._offsets[positions]
        lengths = self._offsets[positions + 1] - starts
        ends = np.cumsum(lengths)
        within = np.arange(int(ends[-1])) - np.repeat(ends - lengths, lengths)
        # Each string's bytes, then one NUL (a separator: the last string has none).
        placed = np.repeat(ends - lengths + np.arange(len(positions)), lengths) + within
        joined = np.zeros(int(ends[-1]) + len(positions) - 1, dtype=np.uint8)
        joined[placed] = self._data[np.repeat(starts, lengths) + within]
        texts = joined.tobytes().decode("utf-8", "surrogatepass").split("\x00")
        if len(texts) != len(positions):  # a string held a NUL: split where it should not
            return [self[int(i)] for i in positions]
        return texts

    def _at(self, index: int) -> str:
        start, end = self._offsets[index], self._offsets[index + 1]
        return bytes(self._data[start:end]).decode("utf-8", "surrogatepass")
