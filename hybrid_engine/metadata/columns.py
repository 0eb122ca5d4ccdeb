"""``MetadataColumns``: the metadata of a segment's documents as columns, one per field.

Layout
------
Each field is stored on its own, CSR over the ``n`` documents (``field.FieldColumn``); with
``nnz`` the number of values the field holds over all documents:

===================  =======  ========  ===================================================
array                dtype    shape     meaning
===================  =======  ========  ===================================================
``state``            uint8    (n,)      0 missing, 1 one value (scalar), 2 a list
``offsets``          int64    (n + 1,)  document ``i`` holds values ``offsets[i]:offsets[i+1]``
``kinds``            uint8    (nnz,)    0 null, 1 bool, 2 int, 3 float, 4 str
``numbers``          float64  (nnz,)    an int's or a float's value, a bool's 0/1, else 0
``codes``            int32    (nnz,)    a str's code in the dictionary, else -1
``strings_bytes``    uint8              the dictionary: the field's distinct strings in
``strings_offsets``  int64              code point order, as UTF-8 bytes and offsets
===================  =======  ========  ===================================================

A scalar is a list of length 1 flagged as a scalar; a missing field holds no value, and so
does an empty list (the flag tells them apart). Ints, floats and bools share ``numbers``
(exact: ints lie within ±2**53) and stay apart by kind. A string is its rank in the sorted
dictionary, so string equality and range comparisons are integer comparisons on codes; every
column holds its own dictionary, of the strings in use only.

The representation is canonical: the same records give the same arrays, however they were
put together (``from_records``, ``take``, ``concat``, ``from_arrays``).

Saved (``to_arrays``) as ``<prefix>_<j>_<array>`` for the ``j``-th field in sorted order, next
to a JSON-able description of the fields; ``from_arrays`` checks every invariant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hybrid_engine.metadata.field import ROLES, FieldColumn
from hybrid_engine.metadata.values import KIND_NAMES, LIST_MARKER, MISSING
from hybrid_engine.packed import checked_position

_KNOWN_KINDS = frozenset((*KIND_NAMES, LIST_MARKER))


def _check_field_name(name: object, where: str) -> str:
    """``name`` as a field name: a non-empty str not starting with ``$``."""
    if not isinstance(name, str):
        raise TypeError(f"{where}: field names are str, got {type(name).__name__} {name!r}")
    if not name or name.startswith("$"):
        raise ValueError(
            f"{where}: field name {name!r} must be a non-empty str not starting with '$' "
            "(names starting with '$' are filter operators)"
        )
    return name


class MetadataColumns:
    """The metadata of ``n`` documents: per document a dict of field name to value.

    A value is None, a bool, an int within ±2**53, a finite float, a str, or a list of str or
    of int (possibly empty). Build with ``from_records`` or ``empty``, select and join with
    ``take`` and ``concat``, save with ``to_arrays`` and load with ``from_arrays``; the layout
    is described in the module docstring. Immutable, so thread-safe.
    """

    __slots__ = ("_columns", "_n")

    def __init__(self, n: int, columns: Mapping[str, FieldColumn]) -> None:
        """Private: use ``from_records``, ``empty``, ``take``, ``concat`` or ``from_arrays``."""
        self._n = n
        self._columns = dict(sorted(columns.items()))

    @classmethod
    def from_records(cls, records: Sequence[Mapping[str, Any] | None]) -> MetadataColumns:
        """The columns of ``records``: one mapping (or None, for no metadata) per document.

        None and ``{}`` are the same (a document without fields); ``record`` gives ``{}``.

        Raises
        ------
        TypeError
            A record is not a mapping or None, a field name is not a str, or a value is of a
            type not allowed (a dict, a tuple, bytes, a numpy scalar, a list of mixed str and
            int or of other kinds): the message names the document position and the field.
        ValueError
            A field name is empty or starts with ``$``, an int lies outside ±2**53, or a float
            is NaN or infinite.
        """
        positions: dict[str, list[int]] = {}
        values: dict[str, list[object]] = {}
        for position, record in enumerate(records):
            if record is None:
                continue
            if not isinstance(record, Mapping):
                raise TypeError(
                    f"document {position}: metadata must be a mapping of field names to values "
                    f"or None, got {type(record).__name__}"
                )
            for name, value in record.items():
                _check_field_name(name, f"document {position}")
                positions.setdefault(name, []).append(position)
                values.setdefault(name, []).append(value)
        n = len(records)
        columns = {
            name: FieldColumn.from_values(name, n, positions[name], values[name]) for name in values
        }
        return cls(n, columns)

    @classmethod
    def empty(cls, n: int) -> MetadataColumns:
        """``n`` documents without metadata."""
        return cls(n, {})

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return f"MetadataColumns(n={self._n}, fields={list(self._columns)})"

    @property
    def fields(self) -> tuple[str, ...]:
        """The names of the fields some document holds, sorted."""
        return tuple(self._columns)

    def kinds(self, field: str) -> frozenset[str]:
        """The kinds of value ``field`` holds: some of ``"str"``, ``"int"``, ``"float"``,
        ``"bool"``, ``"null"`` (list items count as their own kind), plus ``"list"`` when a
        document holds a list there (an empty list adds only ``"list"``). Empty for a field no
        document holds."""
        column = self._columns.get(field)
        return frozenset() if column is None else column.kind_names()

    def column(self, field: str) -> FieldColumn | None:
        """The column of ``field``, or None when no document holds it (for filters)."""
        return self._columns.get(field)

    def record(self, position: int) -> dict[str, Any]:
        """The metadata of document ``position`` (negative from the end), as it was given:
        ints stay ints, lists stay lists, None stays None, missing fields are absent.

        Raises
        ------
        IndexError
            ``position`` is out of range.
        """
        i = checked_position(position, self._n, "documents")
        return {
            name: column.value(i)
            for name, column in self._columns.items()
            if column.state[i] != MISSING
        }

    def records(self, positions: Sequence[int] | np.ndarray) -> list[dict[str, Any]]:
        """``record(i)`` for each of ``positions``."""
        return [self.record(int(i)) for i in positions]

    def take(self, positions: np.ndarray) -> MetadataColumns:
        """The metadata of documents ``positions`` (1-d int, each in ``[0, n)``, repeats
        allowed), in that order: what a merge keeps of a segment.

        Raises
        ------
        TypeError
            ``positions`` is not a 1-d integer array.
        IndexError
            A position is outside ``[0, n)``.
        """
        if (
            not isinstance(positions, np.ndarray)
            or positions.ndim != 1
            or (positions.dtype.kind not in "iu")
        ):
            raise TypeError("positions must be a 1-d numpy array of int (np.int64)")
        if len(positions) and (positions.min() < 0 or positions.max() >= self._n):
            raise IndexError(f"positions must lie in [0, {self._n}) for {self._n} documents")
        rows = positions.astype(np.int64, copy=False)
        taken = {name: column.take(rows) for name, column in self._columns.items()}
        return MetadataColumns(len(rows), {n: c for n, c in taken.items() if c is not None})

    @classmethod
    def concat(cls, parts: Sequence[MetadataColumns]) -> MetadataColumns:
        """The documents of ``parts``, one part after the other."""
        names = sorted({name for part in parts for name in part._columns})
        return cls(
            sum(len(part) for part in parts),
            {
                name: FieldColumn.concat([(part.column(name), len(part)) for part in parts])
                for name in names
            },
        )

    def to_arrays(self, prefix: str = "meta") -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The arrays to save and their JSON-able description.

        Parameters
        ----------
        prefix : str
            Start of every array name: ASCII letters, digits and ``_`` (the names are file
            stems).

        Returns
        -------
        arrays : dict of str to numpy.ndarray
            ``<prefix>_<j>_<array>`` for the ``j``-th field (module docstring): 1-d uint8,
            int32, int64 and float64 arrays.
        description : dict
            ``{"documents": n, "fields": [{"name", "kinds", "prefix"}, ...], "arrays": [...]}``:
            per field (sorted) its name, its kinds (``kinds``, sorted) and the prefix of its
            arrays; then the names of all the arrays.
        """
        if not _is_stem(prefix):
            raise ValueError(f"prefix {prefix!r} must be non-empty ASCII letters, digits and _")
        arrays: dict[str, np.ndarray] = {}
        fields = []
        for j, (name, column) in enumerate(self._columns.items()):
            arrays.update(column.arrays(f"{prefix}_{j}"))
            fields.append(
                {"name": name, "kinds": sorted(column.kind_names()), "prefix": f"{prefix}_{j}"}
            )
        return arrays, {"documents": self._n, "fields": fields, "arrays": sorted(arrays)}

    @classmethod
    def from_arrays(
        cls, arrays: Mapping[str, np.ndarray], description: Mapping[str, Any], n: int
    ) -> MetadataColumns:
        """The columns ``to_arrays`` gave, for ``n`` documents; every array and the description
        are checked.

        Raises
        ------
        ValueError
            The description is malformed or does not match ``n`` or the array names, a field
            name is invalid or out of order, a kind is unknown or differs from the data, or an
            array is missing or breaks the layout (dtype, shape, offsets, codes:
            ``FieldColumn.from_arrays``): the message names the field and what is wrong.
        """
        fields = description.get("fields") if isinstance(description, Mapping) else None
        names = description.get("arrays") if isinstance(description, Mapping) else None
        if (
            not isinstance(fields, list)
            or not isinstance(names, list)
            or not all(isinstance(name, str) for name in names)
            or description.get("documents") != n
        ):
            raise ValueError(
                f"the metadata description must be a dict of 'documents' ({n}), a list of "
                f"'fields' and a list of 'arrays', got {description!r:.200}"
            )
        columns: dict[str, FieldColumn] = {}
        for j, entry in enumerate(fields):
            name, kinds, prefix = _entry(entry, j)
            if columns and name <= list(columns)[-1]:
                raise ValueError(f"metadata field {name!r}: fields must be distinct and sorted")
            column = FieldColumn.from_arrays(arrays, prefix, n, name)
            if column.kind_names() != kinds:
                raise ValueError(
                    f"metadata field {name!r}: the description says kinds {sorted(kinds)}, the "
                    f"arrays hold {sorted(column.kind_names())}"
                )
            columns[name] = column
        prefixes = [entry["prefix"] for entry in fields]
        if sorted(names) != sorted(f"{p}_{role}" for p in prefixes for role in ROLES):
            raise ValueError(
                "the metadata description's 'arrays' are not those of its fields' prefixes"
            )
        return cls(n, columns)


def _is_stem(prefix: object) -> bool:
    """Whether ``prefix`` is non-empty ASCII letters, digits and ``_``."""
    return (
        isinstance(prefix, str)
        and bool(prefix)
        and all(c.isascii() and (c.isalnum() or c == "_") for c in prefix)
    )


def _entry(entry: object, j: int) -> tuple[str, frozenset[str], str]:
    """The name, kinds and array prefix of the ``j``-th field of a description, checked."""
    if not isinstance(entry, Mapping) or set(entry) != {"name", "kinds", "prefix"}:
        raise ValueError(
            f"metadata field {j}: expected 'name', 'kinds' and 'prefix', got {entry!r:.200}"
        )
    try:
        name = _check_field_name(entry["name"], f"metadata field {j}")
    except TypeError as exc:
        raise ValueError(str(exc)) from None
    kinds, prefix = entry["kinds"], entry["prefix"]
    if not isinstance(kinds, list) or not all(
        isinstance(k, str) and k in _KNOWN_KINDS for k in kinds
    ):
        raise ValueError(
            f"metadata field {name!r}: kinds {kinds!r:.200} are not a list of "
            f"{sorted(_KNOWN_KINDS)}"
        )
    if not _is_stem(prefix):
        raise ValueError(f"metadata field {name!r}: prefix {prefix!r:.200} is not a file stem")
    return name, frozenset(kinds), prefix
