"""The compiled form of a filter: a tree of predicates, each turning ``MetadataColumns`` into a
bool mask over the documents with whole-array numpy operations (no loop over documents).

Leaves test one field: ``Equals`` (``$eq``), ``Within`` (``$in``), ``Compares`` (``$gt``,
``$gte``, ``$lt``, ``$lte``) and ``Exists``; ``All``, ``AnyOf`` and ``Negation`` combine them
(``$ne`` and ``$nin`` are negations). A value test runs over a field's values; a document
matches when any of its values does (a list matches when an item does). String operands are
looked up in each column's own dictionary when the mask is computed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from hybrid_engine.metadata.values import (
    BOOL,
    FLOAT,
    INT,
    KIND_NAMES,
    MISSING,
    NULL,
    STR,
    scalar_kind,
)

if TYPE_CHECKING:
    from hybrid_engine.metadata.columns import MetadataColumns
    from hybrid_engine.metadata.field import FieldColumn

Scalar = None | bool | int | float | str
"""An operand: a single metadata value."""

RANGES: dict[str, np.ufunc] = {
    "$gt": np.greater,
    "$gte": np.greater_equal,
    "$lt": np.less,
    "$lte": np.less_equal,
}
"""The range operators and their comparison."""
_SYMBOLS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_CLASSES = {BOOL: "bool", INT: "number", FLOAT: "number", STR: "str"}
"""What each kind of value compares with: ints and floats are both numbers."""


class Predicate(ABC):
    """A compiled condition over documents. Immutable, so thread-safe."""

    __slots__ = ()

    @abstractmethod
    def mask(self, columns: MetadataColumns) -> np.ndarray:
        """bool ``(len(columns),)``: which documents satisfy the condition."""

    @abstractmethod
    def fields(self) -> frozenset[str]:
        """The fields the condition reads."""

    @abstractmethod
    def render(self) -> str:
        """The condition as a readable expression."""

    @abstractmethod
    def check_kinds(self, kinds_of: Callable[[str], frozenset[int]]) -> None:
        """Raise ``TypeError`` when an operand cannot compare with the values its field holds
        (``check_operand``); ``kinds_of(field)`` gives the kind codes a field holds."""


def check_operand(field: str, operand: Scalar, held: frozenset[int], condition: str) -> None:
    """``TypeError`` unless ``operand`` can compare with a value of the kinds ``held`` by
    ``field``: numbers (int and float) with numbers, strings with strings, bools with bools.
    None compares with every field, and a field holding no value but None (or none at all)
    with every operand (it matches nothing, as before)."""
    values = held - {NULL}
    if operand is None or not values:
        return
    kind = scalar_kind(operand, f"field {field!r}")
    if _CLASSES[kind] in {_CLASSES[k] for k in values}:
        return
    names = " and ".join(KIND_NAMES[k] for k in sorted(values))
    raise TypeError(
        f"filter {condition}: field {field!r} holds {names} values in the index, and the "
        f"{KIND_NAMES[kind]} {operand!r:.100} cannot compare with them; give a value of the "
        f"field's type (numbers compare with int and float alike)"
    )


class FieldPredicate(Predicate):
    """A condition on one field: ``values`` tests each value of a column, and a document
    matches when one of its values passes; documents without the field get ``absent``."""

    __slots__ = ("field",)

    def __init__(self, field: str) -> None:
        self.field = field

    def fields(self) -> frozenset[str]:
        return frozenset((self.field,))

    def mask(self, columns: MetadataColumns) -> np.ndarray:
        column = columns.column(self.field)
        if column is None:
            return np.full(len(columns), self.absent())
        matched = column.documents(self.values(column))
        if self.absent():
            matched |= column.state == MISSING
        return matched

    def absent(self) -> bool:
        """Whether a document without the field matches (only a test for None does)."""
        return False

    @abstractmethod
    def values(self, column: FieldColumn) -> np.ndarray:
        """bool ``(nnz,)``: which values of ``column`` pass."""


def _equal(column: FieldColumn, operand: Scalar) -> np.ndarray:
    """bool ``(nnz,)``: which values of ``column`` equal ``operand`` (a bool only a bool, a
    number any int or float of the same value, a str the same str, None a None)."""
    if operand is None:
        return column.kinds == NULL
    if isinstance(operand, bool):
        return (column.kinds == BOOL) & (column.numbers == float(operand))
    if isinstance(operand, str):
        code = column.strings.find(operand)
        return np.zeros(len(column.codes), bool) if code is None else column.codes == code
    return column.numeric & (column.numbers == float(operand))


class Equals(FieldPredicate):
    """``{field: {"$eq": operand}}``; for None, documents without the field match too."""

    __slots__ = ("operand",)

    def __init__(self, field: str, operand: Scalar) -> None:
        super().__init__(field)
        self.operand = operand

    def absent(self) -> bool:
        return self.operand is None

    def values(self, column: FieldColumn) -> np.ndarray:
        return _equal(column, self.operand)

    def check_kinds(self, kinds_of: Callable[[str], frozenset[int]]) -> None:
        check_operand(self.field, self.operand, kinds_of(self.field), self.render())

    def render(self) -> str:
        return f"{self.field} == {self.operand!r}"


class Within(FieldPredicate):
    """``{field: {"$in": operands}}``: equal to one of ``operands`` (``Equals`` for each)."""

    __slots__ = ("operands",)

    def __init__(self, field: str, operands: Sequence[Scalar]) -> None:
        super().__init__(field)
        self.operands = tuple(operands)

    def absent(self) -> bool:
        return any(x is None for x in self.operands)

    def values(self, column: FieldColumn) -> np.ndarray:
        strings = [x for x in self.operands if isinstance(x, str)]
        bools = [float(x) for x in self.operands if isinstance(x, bool)]
        numbers = [
            float(x)
            for x in self.operands
            if isinstance(x, (int, float)) and not isinstance(x, bool)
        ]
        found = [column.strings.find(x) for x in strings]
        hits = np.isin(column.codes, [c for c in found if c is not None])
        hits |= (column.kinds == BOOL) & np.isin(column.numbers, bools)
        hits |= column.numeric & np.isin(column.numbers, numbers)
        if self.absent():
            hits |= column.kinds == NULL
        return hits

    def render(self) -> str:
        return f"{self.field} in {list(self.operands)!r}"

    def check_kinds(self, kinds_of: Callable[[str], frozenset[int]]) -> None:
        held = kinds_of(self.field)
        for operand in self.operands:
            check_operand(self.field, operand, held, self.render())


class Compares(FieldPredicate):
    """``{field: {op: operand}}`` for a range operator: numbers against a number operand,
    strings (code point order) against a str one; other values never pass."""

    __slots__ = ("op", "operand")

    def __init__(self, field: str, op: str, operand: int | float | str) -> None:
        super().__init__(field)
        self.op, self.operand = op, operand

    def values(self, column: FieldColumn) -> np.ndarray:
        compare = RANGES[self.op]
        if not isinstance(self.operand, str):
            return column.numeric & compare(column.numbers, float(self.operand))
        # Codes in [0, first) stand for strings below the operand, codes >= end above it;
        # other values have code -1.
        first, end = column.strings.bounds(self.operand)
        codes = column.codes
        if self.op == "$gt":
            return codes >= end
        if self.op == "$gte":
            return codes >= first
        return (codes >= 0) & (codes < (first if self.op == "$lt" else end))

    def render(self) -> str:
        return f"{self.field} {_SYMBOLS[self.op]} {self.operand!r}"

    def check_kinds(self, kinds_of: Callable[[str], frozenset[int]]) -> None:
        check_operand(self.field, self.operand, kinds_of(self.field), self.render())


class Exists(Predicate):
    """``{field: {"$exists": present}}``: the document holds the field (even None or an empty
    list), or (``present`` false) does not."""

    __slots__ = ("field", "present")

    def __init__(self, field: str, present: bool) -> None:
        self.field, self.present = field, present

    def fields(self) -> frozenset[str]:
        return frozenset((self.field,))

    def mask(self, columns: MetadataColumns) -> np.ndarray:
        column = columns.column(self.field)
        if column is None:
            return np.full(len(columns), not self.present)
        return (column.state != MISSING) == self.present

    def render(self) -> str:
        return f"{'' if self.present else 'not '}exists({self.field})"

    def check_kinds(self, kinds_of: Callable[[str], frozenset[int]]) -> None:
        """``$exists`` has no operand to compare: it goes with every field."""


class Combined(Predicate):
    """Conditions joined into one (``All``, ``AnyOf``): their fields, and their operands
    checked, are those of every child."""

    __slots__ = ("children",)

    def __init__(self, children: Sequence[Predicate]) -> None:
        self.children = tuple(children)

    def fields(self) -> frozenset[str]:
        return frozenset().union(*(c.fields() for c in self.children))

    def check_kinds(self, kinds_of: Callable[[str], frozenset[int]]) -> None:
        for child in self.children:
            child.check_kinds(kinds_of)


class All(Combined):
    """Every condition holds (none: every document matches)."""

    __slots__ = ()

    def mask(self, columns: MetadataColumns) -> np.ndarray:
        matched = np.ones(len(columns), bool)
        for child in self.children:
            matched &= child.mask(columns)
        return matched

    def render(self) -> str:
        if not self.children:
            return "every document"
        return " and ".join(_grouped(c) for c in self.children)


class AnyOf(Combined):
    """At least one condition holds."""

    __slots__ = ()

    def mask(self, columns: MetadataColumns) -> np.ndarray:
        matched = np.zeros(len(columns), bool)
        for child in self.children:
            matched |= child.mask(columns)
        return matched

    def render(self) -> str:
        return " or ".join(_grouped(c) for c in self.children)


class Negation(Predicate):
    """The condition does not hold (``$not``, ``$ne``, ``$nin``)."""

    __slots__ = ("child",)

    def __init__(self, child: Predicate) -> None:
        self.child = child

    def fields(self) -> frozenset[str]:
        return self.child.fields()

    def mask(self, columns: MetadataColumns) -> np.ndarray:
        return ~self.child.mask(columns)

    def render(self) -> str:
        return f"not ({self.child.render()})"

    def check_kinds(self, kinds_of: Callable[[str], frozenset[int]]) -> None:
        self.child.check_kinds(kinds_of)


def _grouped(predicate: Predicate) -> str:
    """``render()``, in parentheses when it joins several conditions."""
    text = predicate.render()
    combined = isinstance(predicate, Combined) and len(predicate.children) > 1
    return f"({text})" if combined else text
