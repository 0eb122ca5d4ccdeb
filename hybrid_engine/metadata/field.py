"""One metadata field over the documents of a segment, as columns (see ``columns`` for the
layout)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hybrid_engine.metadata.dictionary import StringDictionary
from hybrid_engine.metadata.values import (
    BOOL,
    FLOAT,
    INT,
    KIND_NAMES,
    LIST,
    LIST_MARKER,
    MAX_EXACT_INT,
    MISSING,
    NULL,
    SCALAR,
    STR,
    scalar_kind,
)

ROLES = ("state", "offsets", "kinds", "numbers", "codes", "strings_bytes", "strings_offsets")
"""The arrays of one field, each saved as ``<prefix>_<role>``."""


def _frozen(array: np.ndarray) -> np.ndarray:
    """A read-only view of ``array``."""
    view = array.view()
    view.flags.writeable = False
    return view


class FieldColumn:
    """The values of one field over ``n`` documents, CSR over the documents.

    Attributes
    ----------
    state : numpy.ndarray
        uint8 ``(n,)``: ``MISSING``, ``SCALAR`` or ``LIST`` (``values``) per document.
    offsets : numpy.ndarray
        int64 ``(n + 1,)``: document ``i`` holds values ``offsets[i]:offsets[i + 1]`` (none when
        missing, one when scalar, its items when a list).
    kinds : numpy.ndarray
        uint8 ``(nnz,)``: each value's kind code (``values``).
    numbers : numpy.ndarray
        float64 ``(nnz,)``: the value of an int or a float, 0 or 1 for a bool, 0 otherwise.
    codes : numpy.ndarray
        int32 ``(nnz,)``: a str value's code in ``strings``, -1 for other kinds.
    strings : StringDictionary
        The field's distinct strings, sorted; every code in use.

    Read-only, so thread-safe (the lazily built ``owner`` and ``numeric`` may be built twice by
    racing threads, to the same value).
    """

    __slots__ = ("_numeric", "_owner", "codes", "kinds", "numbers", "offsets", "state", "strings")

    def __init__(
        self,
        state: np.ndarray,
        offsets: np.ndarray,
        kinds: np.ndarray,
        numbers: np.ndarray,
        codes: np.ndarray,
        strings: StringDictionary,
    ) -> None:
        """Private: use ``from_values``, ``take``, ``concat`` or ``from_arrays``."""
        self.state, self.offsets = _frozen(state), _frozen(offsets)
        self.kinds, self.numbers, self.codes = _frozen(kinds), _frozen(numbers), _frozen(codes)
        self.strings = strings
        self._owner: np.ndarray | None = None
        self._numeric: np.ndarray | None = None

    @classmethod
    def from_values(
        cls, name: str, n: int, positions: Sequence[int], values: Sequence[object]
    ) -> FieldColumn:
        """The column of field ``name`` where document ``positions[j]`` (ascending) holds
        ``values[j]`` and the other documents of ``n`` hold nothing.

        Raises
        ------
        TypeError, ValueError
            A value is not allowed (``values.scalar_kind``; a list must hold only str or only
            int): the message names the document position and the field.
        """
        state = np.zeros(n, np.uint8)
        counts = np.zeros(n, np.int64)
        kinds: list[int] = []
        items: list[Any] = []
        for position, value in zip(positions, values, strict=True):
            where = f"document {position}, field {name!r}"
            if isinstance(value, list):
                state[position], counts[position] = LIST, len(value)
                kinds.extend(_list_kinds(value, where))
                items.extend(value)
            else:
                state[position], counts[position] = SCALAR, 1
                kinds.append(scalar_kind(value, where))
                items.append(value)
        kind = np.array(kinds, np.uint8)
        is_str = kind == STR
        numbers = np.zeros(len(items), np.float64)
        numeric = ~is_str & (kind != NULL)
        numbers[numeric] = [float(v) for v, keep in zip(items, numeric, strict=True) if keep]
        strings, str_codes = StringDictionary.encode(
            [v for v, keep in zip(items, is_str, strict=True) if keep]
        )
        codes = np.full(len(items), -1, np.int32)
        codes[is_str] = str_codes
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        return cls(state, offsets, kind, numbers, codes, strings)

    @property
    def owner(self) -> np.ndarray:
        """int64 ``(nnz,)``: the document of each value."""
        if self._owner is None:
            self._owner = _frozen(np.repeat(np.arange(len(self.state)), np.diff(self.offsets)))
        return self._owner

    @property
    def numeric(self) -> np.ndarray:
        """bool ``(nnz,)``: which values are ints or floats (bools are not numbers)."""
        if self._numeric is None:
            self._numeric = _frozen((self.kinds == INT) | (self.kinds == FLOAT))
        return self._numeric

    def documents(self, hits: np.ndarray) -> np.ndarray:
        """bool ``(n,)``: the documents with at least one value where ``hits`` (bool
        ``(nnz,)``) is true."""
        out = np.zeros(len(self.state), bool)
        out[self.owner[hits]] = True
        return out

    def held_kinds(self, documents: np.ndarray | None = None) -> frozenset[int]:
        """The kind codes of the values ``documents`` (bool ``(n,)``; None: every document)
        hold, list items included."""
        kinds = self.kinds if documents is None else self.kinds[documents[self.owner]]
        return frozenset(np.unique(kinds).tolist())

    def kind_names(self) -> frozenset[str]:
        """The kinds the values hold, plus ``"list"`` when some document holds a list."""
        names = {KIND_NAMES[k] for k in np.unique(self.kinds).tolist()}
        if np.any(self.state == LIST):
            names.add(LIST_MARKER)
        return frozenset(names)

    def value(self, position: int) -> object:
        """What document ``position`` holds (a list for a list); ``MISSING`` must be checked
        first."""
        start, end = int(self.offsets[position]), int(self.offsets[position + 1])
        items = [self._item(j) for j in range(start, end)]
        return items if self.state[position] == LIST else items[0]

    def _item(self, j: int) -> object:
        kind = self.kinds[j]
        if kind == STR:
            return self.strings[int(self.codes[j])]
        if kind == INT:
            return int(self.numbers[j])
        if kind == FLOAT:
            return float(self.numbers[j])
        if kind == BOOL:
            return bool(self.numbers[j])
        return None

    def take(self, positions: np.ndarray) -> FieldColumn | None:
        """The column of documents ``positions`` (int64, in range), in that order; None when
        none of them holds the field. The dictionary keeps only the strings still in use."""
        state = self.state[positions]
        if not np.any(state != MISSING):
            return None
        counts = np.diff(self.offsets)[positions]
        offsets = np.zeros(len(positions) + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        gather = np.repeat(self.offsets[:-1][positions] - offsets[:-1], counts)
        gather += np.arange(offsets[-1])
        codes = self.codes[gather]
        is_str = codes >= 0
        used, renumbered = np.unique(codes[is_str], return_inverse=True)
        codes[is_str] = renumbered
        return FieldColumn(
            state,
            offsets,
            self.kinds[gather],
            self.numbers[gather],
            codes,
            self.strings.subset(used),
        )

    @classmethod
    def concat(cls, parts: Sequence[tuple[FieldColumn | None, int]]) -> FieldColumn:
        """The columns of ``parts`` (a column, or None for ``n`` documents without the field)
        one after the other; at least one part has a column."""
        present = [column if column is not None else _absent(n) for column, n in parts]
        strings, mappings = StringDictionary.merge([c.strings for c in present])
        codes = []
        for column, mapping in zip(present, mappings, strict=True):
            part_codes = column.codes.copy()
            is_str = part_codes >= 0
            part_codes[is_str] = mapping[part_codes[is_str]]
            codes.append(part_codes)
        counts = np.concatenate([np.diff(c.offsets) for c in present])
        offsets = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=offsets[1:])
        return cls(
            np.concatenate([c.state for c in present]),
            offsets,
            np.concatenate([c.kinds for c in present]),
            np.concatenate([c.numbers for c in present]),
            np.concatenate(codes),
            strings,
        )

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The arrays to save, ``<prefix>_<role>`` for each of ``ROLES``."""
        return {
            f"{prefix}_state": self.state,
            f"{prefix}_offsets": self.offsets,
            f"{prefix}_kinds": self.kinds,
            f"{prefix}_numbers": self.numbers,
            f"{prefix}_codes": self.codes,
            **self.strings.arrays(f"{prefix}_strings"),
        }

    @classmethod
    def from_arrays(
        cls, arrays: Mapping[str, np.ndarray], prefix: str, n: int, name: str
    ) -> FieldColumn:
        """The column saved as ``arrays(prefix)`` for ``n`` documents, every invariant checked.

        Raises
        ------
        ValueError
            Naming field ``name`` and what is wrong: an array missing or of the wrong dtype or
            shape, offsets that do not rise from 0 or do not match the states, an unknown kind
            or state code, a list of mixed or disallowed kinds, numbers that their kind cannot
            hold, a code out of range, a bad dictionary, or no document holding the field.
        """
        try:
            return _checked(arrays, prefix, n)
        except ValueError as exc:
            raise ValueError(f"metadata field {name!r}: {exc}") from None


def _list_kinds(items: list[object], where: str) -> list[int]:
    """The kind code of each item of a list value: all INT or all STR."""
    kinds = []
    for j, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, (int, str)):
            raise TypeError(
                f"{where}, list item {j}: {type(item).__name__} {item!r:.40} is not allowed in a "
                "list; a list holds only str or only int"
            )
        kinds.append(scalar_kind(item, f"{where}, list item {j}"))
    if len(set(kinds)) > 1:
        raise TypeError(f"{where}: the list mixes str and int; a list holds only str or only int")
    return kinds


def _absent(n: int) -> FieldColumn:
    """The column of ``n`` documents without the field."""
    empty = StringDictionary.encode([])[0]
    return FieldColumn(
        np.zeros(n, np.uint8),
        np.zeros(n + 1, np.int64),
        np.zeros(0, np.uint8),
        np.zeros(0, np.float64),
        np.zeros(0, np.int32),
        empty,
    )


def _array(arrays: Mapping[str, np.ndarray], name: str, dtype: type, length: int) -> np.ndarray:
    """``arrays[name]``, which must be a 1-d ``dtype`` array of ``length`` items."""
    array = arrays.get(name)
    if array is None:
        raise ValueError(f"array {name} is missing")
    if not isinstance(array, np.ndarray) or array.dtype != dtype or array.ndim != 1:
        shown = (
            f"{array.dtype} of shape {array.shape}"
            if isinstance(array, np.ndarray)
            else f"{type(array).__name__} {array!r:.60}"
        )
        raise ValueError(f"{name} must be a 1-d {np.dtype(dtype)} array, got {shown}")
    if len(array) != length:
        raise ValueError(f"{name} must hold {length} items, got {len(array)}")
    return array


def _checked(arrays: Mapping[str, np.ndarray], prefix: str, n: int) -> FieldColumn:
    """``FieldColumn.from_arrays`` without the field name in its messages."""
    state = _array(arrays, f"{prefix}_state", np.uint8, n)
    offsets = _array(arrays, f"{prefix}_offsets", np.int64, n + 1)
    if offsets[0] != 0 or np.any(np.diff(offsets) < 0):
        raise ValueError(f"{prefix}_offsets must rise (or stay) from 0")
    nnz = int(offsets[-1])
    kinds = _array(arrays, f"{prefix}_kinds", np.uint8, nnz)
    numbers = _array(arrays, f"{prefix}_numbers", np.float64, nnz)
    codes = _array(arrays, f"{prefix}_codes", np.int32, nnz)
    strings = StringDictionary.from_arrays(arrays, f"{prefix}_strings")
    if np.any(state > LIST):
        raise ValueError(f"{prefix}_state holds codes other than 0, 1, 2 (missing, scalar, list)")
    if not np.any(state != MISSING):
        raise ValueError("no document holds the field")
    counts = np.diff(offsets)
    if np.any(counts[state == MISSING] != 0) or np.any(counts[state == SCALAR] != 1):
        raise ValueError(f"{prefix}_offsets give a missing value items or a scalar not one item")
    if np.any(kinds > STR):
        raise ValueError(f"{prefix}_kinds holds codes other than 0-4 ({', '.join(KIND_NAMES)})")
    column = FieldColumn(state, offsets, kinds, numbers, codes, strings)
    in_list = state[column.owner] == LIST
    first = kinds[offsets[column.owner]]  # the kind of each value's first sibling
    if np.any(in_list & (((kinds != INT) & (kinds != STR)) | (kinds != first))):
        raise ValueError(f"{prefix}_kinds: a list holds another kind than only str or only int")
    is_number = (kinds == INT) | (kinds == FLOAT) | (kinds == BOOL)
    if not np.all(np.isfinite(numbers)) or np.any(numbers[~is_number] != 0):
        raise ValueError(f"{prefix}_numbers: not finite, or not 0 for a str or None value")
    ints, bools = numbers[kinds == INT], numbers[kinds == BOOL]
    if np.any(ints != np.trunc(ints)) or np.any(np.abs(ints) > MAX_EXACT_INT):
        raise ValueError(f"{prefix}_numbers: an int value is not an int within ±2**53")
    if np.any((bools != 0) & (bools != 1)):
        raise ValueError(f"{prefix}_numbers: a bool value is neither 0 nor 1")
    is_str = kinds == STR
    str_codes = codes[is_str]
    if np.any(codes[~is_str] != -1) or np.any((str_codes < 0) | (str_codes >= len(strings))):
        raise ValueError(
            f"{prefix}_codes: a str value's code is outside [0, {len(strings)}) or another "
            "value's code is not -1"
        )
    return column
