"""Strings packed as UTF-8 bytes plus offsets: the document texts an engine keeps for reranking."""

from __future__ import annotations

from collections.abc import Sequence
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


class TextStore(Sequence[str]):
    """Texts by corpus position, packed (``pack_utf8``) and decoded on access.

    Build with ``from_texts``, or from saved arrays with ``from_arrays``. Read-only, so
    thread-safe.
    """

    def __init__(self, data: np.ndarray, offsets: np.ndarray) -> None:
        """Private: use ``from_texts`` or ``from_arrays``."""
        self._data = data
        self._offsets = offsets

    @classmethod
    def from_texts(cls, texts: Sequence[str]) -> TextStore:
        """Pack ``texts`` (each a ``str``)."""
        return cls(*pack_utf8(texts))

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], count: int) -> TextStore:
        """The store saved as ``arrays()``, which must hold ``count`` texts.

        Raises
        ------
        ValueError
            The arrays are missing, of the wrong dtype, or their offsets do not cut the bytes
            into ``count`` texts.
        """
        data, offsets = arrays.get("text_bytes"), arrays.get("text_offsets")
        if (
            data is None
            or offsets is None
            or (data.dtype, offsets.dtype, data.ndim, offsets.ndim) != (np.uint8, np.int64, 1, 1)
            or not delimits(offsets, data, count)
        ):
            raise ValueError(f"text_bytes and text_offsets do not hold {count} texts")
        return cls(data, offsets)

    def arrays(self) -> dict[str, np.ndarray]:
        """``text_bytes`` (uint8) and ``text_offsets`` (int64), to save."""
        return {"text_bytes": self._data, "text_offsets": self._offsets}

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, position: int) -> str: ...
    @overload
    def __getitem__(self, position: slice) -> list[str]: ...
    def __getitem__(self, position: int | slice) -> str | list[str]:
        if isinstance(position, slice):
            return [self[i] for i in range(*position.indices(len(self)))]
        n = len(self)
        position = int(position)
        if position < 0:
            position += n
        if not 0 <= position < n:
            raise IndexError(f"text position {position} out of range for {n} texts")
        start, end = self._offsets[position], self._offsets[position + 1]
        return bytes(self._data[start:end]).decode("utf-8", "surrogatepass")
