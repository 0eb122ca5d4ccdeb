"""``Filter``: a metadata condition in the Mongo-style dialect of Chroma and Pinecone,
validated and compiled once, then applied to any segment's ``MetadataColumns`` as a bool mask
(the dialect and its semantics: ``docs/filters.md``).

Grammar::

    filter     := {key: ..., ...}            every key must hold (an empty dict: all documents)
    key        := field: condition
                | "$and": [filter, ...]      all of them (a non-empty list)
                | "$or":  [filter, ...]      any of them (a non-empty list)
                | "$not": filter             the filter does not hold
    condition  := value                      same as {"$eq": value}
                | {operator: operand, ...}   every operator must hold
    operator   := $eq $ne $in $nin $gt $gte $lt $lte $exists
                | "$not": {operator: operand, ...}   Mongo's field-level negation

A value is None, a bool, an int within ±2**53, a finite float or a str. A list field matches an
operator when one of its items does; ``$ne`` and ``$nin`` are the negations of ``$eq`` and
``$in`` (so they match documents without the field); ``$eq None`` matches a None value and a
missing field. Numbers compare with numbers, strings with strings (code point order), bools
only by equality with bools. Against a collection (``check_kinds``, which every search
applies), an operand of another type than the values its field holds is a TypeError; a field
no document holds matches as an empty one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from hybrid_engine.metadata.columns import MetadataColumns
from hybrid_engine.metadata.predicates import (
    RANGES,
    All,
    AnyOf,
    Compares,
    Equals,
    Exists,
    Negation,
    Predicate,
    Scalar,
    Within,
)
from hybrid_engine.metadata.values import BOOL, FLOAT, INT, KIND_NAMES, NULL, STR, scalar_kind

FIELD_OPERATORS = ("$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$exists", "$not")
"""Operators of a field's condition."""
LOGICAL_OPERATORS = ("$and", "$or", "$not")
"""Operators of a filter's top level (and of every filter inside ``$and``/``$or``/``$not``)."""
MAX_NESTING = 100
"""Dicts and lists a filter may nest, at most (Mongo's limit for documents): compiling and
masking recurse once per level, so a deeper one is refused with a ValueError rather than
exhausting Python's stack (a ``RecursionError`` from about 500 levels)."""

SCHEMA_TYPES: dict[str, frozenset[int]] = {
    "str": frozenset((STR,)),
    "list[str]": frozenset((STR,)),
    "int": frozenset((INT, FLOAT)),
    "float": frozenset((INT, FLOAT)),
    "number": frozenset((INT, FLOAT)),
    "list[int]": frozenset((INT, FLOAT)),
    "bool": frozenset((BOOL,)),
}
"""The types a schema may declare, and the operand kinds each compares with (None compares
with every type)."""


class Filter:
    """A compiled metadata filter; build with ``Filter.compile``.

    Attributes
    ----------
    fields : tuple of str
        The fields the filter reads, sorted.

    Immutable, so thread-safe: one filter may mask any number of segments at once.
    """

    __slots__ = ("_fields", "_root")

    def __init__(self, root: Predicate) -> None:
        """Private: use ``Filter.compile``."""
        self._root = root
        self._fields = tuple(sorted(root.fields()))

    @classmethod
    def compile(
        cls, spec: Mapping[str, Any] | Filter, schema: Mapping[str, str] | None = None
    ) -> Filter:
        """Validate and compile ``spec``; a ``Filter`` is returned as it is (so callers may
        take either; ``schema`` is then not applied again).

        Parameters
        ----------
        spec : dict or Filter
            The filter, in the dialect of the module docstring.
        schema : dict of str to str, optional
            The known fields and their types (``"str"``, ``"int"``, ``"float"``, ``"number"``,
            ``"bool"``, ``"list[str]"``, ``"list[int]"``): a field it does not name, or an
            operand that cannot compare with the declared type, is refused.

        Raises
        ------
        ValueError
            An unknown operator, an operator at the wrong level, an empty ``$and``/``$or``, an
            empty field name or condition, ``$eq`` with a list (use ``$in``), an int outside
            ±2**53, a NaN or infinite float, a field the schema does not know, a bad schema,
            dicts and lists nested more than ``MAX_NESTING`` deep.
        TypeError
            An operand of the wrong type: not a list for ``$in``/``$nin``/``$and``/``$or``, a
            bool, None, list or dict for a range operator, not a bool for ``$exists``, a value
            of an unsupported type, or one the schema's type cannot compare with.
        """
        if isinstance(spec, Filter):
            return spec
        _check_nesting(spec)
        return cls(_Compiler(schema).filter(spec, "the filter"))

    @property
    def fields(self) -> tuple[str, ...]:
        """The fields the filter reads, sorted."""
        return self._fields

    def mask(self, columns: MetadataColumns) -> np.ndarray:
        """bool ``(len(columns),)``: which documents of ``columns`` match.

        Whole-array numpy work per condition (no loop over documents); string operands are
        looked up in ``columns``' own dictionaries.
        """
        if not isinstance(columns, MetadataColumns):
            raise TypeError(f"expected MetadataColumns, got {type(columns).__name__}")
        return self._root.mask(columns)

    def check_kinds(self, kinds_of: Callable[[str], frozenset[int]]) -> None:
        """Refuse an operand of another type than the values its field holds.

        Parameters
        ----------
        kinds_of : callable
            A field's name to the kind codes (``values.NULL`` ... ``values.STR``) of the
            values the collection holds in it, list items included; empty for a field no
            document holds.

        Raises
        ------
        TypeError
            An operand of ``$eq``, ``$ne``, ``$in``, ``$nin`` or a range operator that cannot
            compare with any value of its field (a str against a field of numbers, a number
            against a field of str, a bool against a field without bools...): the message
            names the condition, the field, the kinds it holds and the operand's. Ints and
            floats are both numbers; None, ``$exists``, and a field that holds no value but
            None (or no document holds) are never refused.
        """
        self._root.check_kinds(kinds_of)

    def __repr__(self) -> str:
        return f"Filter({self._root.render()})"


def _check_nesting(spec: object) -> None:
    """ValueError when ``spec`` nests dicts and lists more than ``MAX_NESTING`` deep (walked
    without recursion, so any depth is measured)."""
    stack = [(spec, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, Mapping):
            children = list(value.values())
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > MAX_NESTING:
            raise ValueError(
                f"the filter nests dicts and lists more than {MAX_NESTING} deep; flatten it "
                '(a chain of "$not" cancels in pairs, nested "$and"s join into one list)'
            )
        stack.extend((child, depth + 1) for child in children)


def _known_operators(level: str) -> str:
    """The operators of a ``"field"``'s condition or of a ``"filter"``, as messages list them."""
    known = FIELD_OPERATORS if level == "field" else LOGICAL_OPERATORS
    return ", ".join(known)


class _Compiler:
    """Turns a filter spec into predicates, checking it against an optional schema."""

    def __init__(self, schema: Mapping[str, str] | None) -> None:
        if schema is not None:
            if not isinstance(schema, Mapping):
                raise TypeError(f"schema must be a dict of field to type, got {schema!r:.100}")
            for name, declared in schema.items():
                if not isinstance(declared, str) or declared not in SCHEMA_TYPES:
                    raise ValueError(
                        f"schema: field {name!r} has type {declared!r}; choose one of "
                        f"{list(SCHEMA_TYPES)}"
                    )
        self.schema = schema

    def filter(self, spec: object, where: str) -> Predicate:
        """The predicate of a filter dict (``where`` names it in messages)."""
        if not isinstance(spec, Mapping):
            raise TypeError(
                f"{where} must be a dict of field conditions, got {type(spec).__name__} "
                f"{spec!r:.100}"
            )
        parts = []
        for key, value in spec.items():
            if key in ("$and", "$or"):
                parts.append(self.logical(key, value))
            elif key == "$not":
                parts.append(Negation(self.filter(value, "the operand of $not")))
            elif isinstance(key, str) and key.startswith("$"):
                if key in FIELD_OPERATORS:
                    raise ValueError(
                        f"{key} is a field operator: put it in a field's condition, "
                        f'{{"field": {{"{key}": ...}}}}, not directly in {where}'
                    )
                raise ValueError(
                    f"unknown operator {key!r} in {where}; the operators there are "
                    f"{_known_operators('filter')}, and in a field's condition "
                    f"{_known_operators('field')}"
                )
            else:
                parts.append(self.field(self.field_name(key), value))
        return parts[0] if len(parts) == 1 else All(parts)

    def logical(self, key: str, operand: object) -> Predicate:
        """``$and`` or ``$or`` of a non-empty list of filters."""
        if not isinstance(operand, list):
            raise TypeError(
                f"{key} takes a list of filter dicts, got {type(operand).__name__} {operand!r:.100}"
            )
        if not operand:
            raise ValueError(f"{key} takes a non-empty list of filter dicts, got []")
        children = [self.filter(spec, f"item {i} of {key}") for i, spec in enumerate(operand)]
        return All(children) if key == "$and" else AnyOf(children)

    def field_name(self, key: object) -> str:
        """``key`` as a field name, known to the schema if there is one."""
        if not isinstance(key, str):
            raise TypeError(f"field names are str, got {type(key).__name__} {key!r}")
        if not key:
            raise ValueError("empty field name in a filter; name the field to test")
        if self.schema is not None and key not in self.schema:
            raise ValueError(f"unknown field {key!r}; the schema declares {sorted(self.schema)}")
        return key

    def field(self, name: str, condition: object) -> Predicate:
        """The predicate of ``{name: condition}``."""
        if not isinstance(condition, Mapping):
            return Equals(name, self.operand(name, "$eq", condition))
        if not condition:
            raise ValueError(
                f"field {name!r}: empty condition {{}}; give a value or operators such as "
                f'{{"$eq": ...}}'
            )
        parts = [self.operator(name, op, operand) for op, operand in condition.items()]
        return parts[0] if len(parts) == 1 else All(parts)

    def operator(self, name: str, op: object, operand: object) -> Predicate:
        """The predicate of operator ``op`` in field ``name``'s condition."""
        if op in ("$eq", "$ne"):
            equals = Equals(name, self.operand(name, op, operand))
            return equals if op == "$eq" else Negation(equals)
        if op in ("$in", "$nin"):
            if not isinstance(operand, list):
                raise TypeError(
                    f"field {name!r}: {op} takes a list of values, got "
                    f"{type(operand).__name__} {operand!r:.100}"
                )
            within = Within(name, [self.operand(name, op, x) for x in operand])
            return within if op == "$in" else Negation(within)
        if op in RANGES:
            return Compares(name, str(op), self.range_operand(name, str(op), operand))
        if op == "$exists":
            if not isinstance(operand, bool):
                raise TypeError(
                    f"field {name!r}: $exists takes true or false, got {operand!r:.100}"
                )
            return Exists(name, operand)
        if op == "$not":
            if not isinstance(operand, Mapping):
                raise TypeError(
                    f"field {name!r}: $not takes a dict of operators such as "
                    f'{{"$not": {{"$gt": 3}}}}, got {operand!r:.100} (for "not equal" use $ne)'
                )
            return Negation(self.field(name, operand))
        if op in ("$and", "$or"):
            raise ValueError(
                f"field {name!r}: {op} is a logical operator; it goes at the level of a filter, "
                f'{{"{op}": [{{"{name}": ...}}, ...]}}, not in a field\'s condition'
            )
        if isinstance(op, str) and op.startswith("$"):
            raise ValueError(
                f"field {name!r}: unknown operator {op!r}; a field's operators are "
                f"{_known_operators('field')}"
            )
        raise ValueError(
            f"field {name!r}: {op!r} is not an operator; a condition is a value or a dict of "
            f"operators ({_known_operators('field')}); nested documents are not supported"
        )

    def operand(self, name: str, op: str, value: object) -> Scalar:
        """A value ``op`` compares for equality, checked against the schema."""
        if isinstance(value, list):
            if op in ("$in", "$nin"):
                raise TypeError(f"field {name!r}: the items of {op} are single values, got a list")
            raise ValueError(
                f"field {name!r}: {op} with a list would compare whole lists, which filters do "
                f'not do; to match any of the values use {{"$in": {value!r:.100}}}'
            )
        kind = scalar_kind(value, f"field {name!r}, {op}")
        self.check_schema(name, op, value, kind)
        return value  # type: ignore[return-value]

    def range_operand(self, name: str, op: str, value: object) -> int | float | str:
        """The operand of a range operator: a number or a str, checked against the schema."""
        if value is None or isinstance(value, (bool, list, Mapping)):
            raise TypeError(
                f"field {name!r}: {op} compares numbers or strings, got "
                f"{type(value).__name__} {value!r:.100}"
            )
        kind = scalar_kind(value, f"field {name!r}, {op}")
        self.check_schema(name, op, value, kind)
        return value  # type: ignore[return-value]

    def check_schema(self, name: str, op: str, value: object, kind: int) -> None:
        """TypeError when the schema declares ``name`` of a type ``value`` cannot compare
        with (None compares with all)."""
        if self.schema is None or kind == NULL:
            return
        declared = self.schema[name]
        if kind not in SCHEMA_TYPES[declared]:
            raise TypeError(
                f"field {name!r} is {declared} in the schema; the {KIND_NAMES[kind]} "
                f"{value!r:.100} of {op} cannot compare with it"
            )
