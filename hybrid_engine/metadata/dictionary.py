"""The string dictionary of one field: its distinct strings, sorted, so that a string value is
stored as its rank (an int32 code) and string comparisons become integer comparisons."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping, Sequence

import numpy as np

from hybrid_engine.packed import PackedStrings

_CODE_LIMIT = 2**31 - 1


class StringDictionary:
    """Distinct strings in ascending code point order (Python's ``str`` order), by code.

    Code ``c`` stands for the ``c``-th smallest string, so for strings ``a`` and ``b`` of one
    dictionary ``a < b`` exactly when ``code(a) < code(b)``. Stored as UTF-8 (lone surrogates
    kept); UTF-8 byte order is code point order. Read-only, so thread-safe.
    """

    __slots__ = ("_strings",)

    def __init__(self, strings: PackedStrings) -> None:
        """Private: use ``encode``, ``merge`` or ``from_arrays``."""
        self._strings = strings

    @classmethod
    def encode(cls, values: Sequence[str]) -> tuple[StringDictionary, np.ndarray]:
        """The dictionary of ``values`` and each value's code (int32, ``(len(values),)``)."""
        distinct = sorted(set(values))
        if len(distinct) > _CODE_LIMIT:
            raise ValueError(f"{len(distinct)} distinct strings in one field exceed 2**31 - 1")
        code = {s: c for c, s in enumerate(distinct)}
        codes = np.fromiter((code[s] for s in values), np.int32, count=len(values))
        return cls(PackedStrings.from_strings(distinct)), codes

    @classmethod
    def merge(cls, parts: Sequence[StringDictionary]) -> tuple[StringDictionary, list[np.ndarray]]:
        """One dictionary of every part's strings, and for each part the new code of each of
        its codes (int32, ``(len(part),)``): ``new_codes = mapping[old_codes]``."""
        strings = [part._strings[:] for part in parts]
        merged, codes = cls.encode([s for part in strings for s in part])
        cuts = np.cumsum([len(part) for part in strings])[:-1]
        return merged, np.split(codes, cuts)

    def subset(self, codes: np.ndarray) -> StringDictionary:
        """The dictionary of the strings of ``codes`` (int, ascending, distinct): their new
        codes are their positions in ``codes``. Gathers bytes; decodes nothing."""
        data, offsets = self._arrays()
        starts, lengths = offsets[codes], offsets[codes + 1] - offsets[codes]
        new_offsets = np.zeros(len(codes) + 1, np.int64)
        np.cumsum(lengths, out=new_offsets[1:])
        gather = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
        arrays = {"s_bytes": data[gather], "s_offsets": new_offsets}
        return StringDictionary(PackedStrings.from_arrays(arrays, len(codes), "s"))

    def find(self, value: str) -> int | None:
        """The code of ``value``, or None when the dictionary does not hold it."""
        code = bisect.bisect_left(self._strings, value)
        return code if code < len(self._strings) and self._strings[code] == value else None

    def bounds(self, value: str) -> tuple[int, int]:
        """``(first, end)``: codes ``< first`` stand for strings ``< value``, codes
        ``>= end`` for strings ``> value`` (``end - first`` is 1 when it holds ``value``)."""
        return (
            bisect.bisect_left(self._strings, value),
            bisect.bisect_right(self._strings, value),
        )

    def __len__(self) -> int:
        return len(self._strings)

    def __getitem__(self, code: int) -> str:
        return self._strings[code]

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """``<prefix>_bytes`` (uint8) and ``<prefix>_offsets`` (int64), to save."""
        return self._strings.arrays(prefix)

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        stored = self._strings.arrays("s")
        return stored["s_bytes"], stored["s_offsets"]

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str) -> StringDictionary:
        """The dictionary saved as ``arrays(prefix)``, checked.

        Raises
        ------
        ValueError
            An array is missing or of the wrong dtype, the offsets do not cut the bytes, the
            bytes are not UTF-8 cut at character boundaries, or the strings are not strictly
            ascending (sorted and distinct).
        """
        data, offsets = arrays.get(f"{prefix}_bytes"), arrays.get(f"{prefix}_offsets")
        if not isinstance(data, np.ndarray) or not isinstance(offsets, np.ndarray):
            raise ValueError(f"{prefix}_bytes and {prefix}_offsets must both be numpy arrays")
        count = max(len(offsets) - 1, 0) if offsets.ndim == 1 else 0
        strings = PackedStrings.from_arrays(arrays, count, prefix)
        if count > _CODE_LIMIT:
            raise ValueError(f"{prefix}: {count} strings exceed 2**31 - 1")
        raw = data.tobytes()
        starts = offsets[:-1][offsets[:-1] < len(data)]
        try:
            raw.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as exc:
            raise ValueError(
                f"{prefix}_bytes is not UTF-8 ({exc.reason} at byte {exc.start})"
            ) from None
        if np.any((data[starts] & 0xC0) == 0x80):
            raise ValueError(f"{prefix}_offsets cut a UTF-8 character of {prefix}_bytes")
        cuts = offsets.tolist()
        pieces = [raw[a:b] for a, b in itertools.pairwise(cuts)]
        if not all(a < b for a, b in itertools.pairwise(pieces)):
            raise ValueError(f"{prefix}: the strings are not sorted and distinct")
        return cls(strings)
