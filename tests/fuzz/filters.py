"""Fuzz the metadata filter parser and its masks: fuzzed filter specs (operators at every
level, wrong operand types, non-str keys, NaN, ints beyond 2**53, numpy scalars, deep
nesting), fuzzed schemas, and fuzzed records.

Contract checked: ``Filter.compile`` and ``MetadataColumns.from_records`` refuse with a
``ValueError`` or ``TypeError`` only; a compiled filter's mask equals the pure-Python
evaluator of the dialect (``test_filters.matches``, written from docs/filters.md) on every
record.
"""

from __future__ import annotations

import sys
from typing import Any

import atheris
import numpy as np
from test_filters import matches

from hybrid_engine.metadata import Filter, MetadataColumns
from tests.fuzz._harness import Unexpected, main, refused

FIELDS = ("a", "tags", "ü", "", "$a", "absent")
OPERATORS = (
    "$eq",
    "$ne",
    "$in",
    "$nin",
    "$gt",
    "$gte",
    "$lt",
    "$lte",
    "$exists",
    "$not",
    "$and",
    "$or",
    "$nor",
    "$regex",
    "eq",
)
SCALARS: tuple[Any, ...] = (
    None,
    True,
    False,
    "",
    "a",
    "b",
    "é",
    "😀",
    "\x00",
    "\ud800",
    "\uffff",
    0,
    1,
    2,
    -1,
    2**53,
    -(2**53),
    2**53 + 1,
    10**30,
    -0.0,
    0.5,
    1.0,
    1e300,
    5e-324,
    2.0**53,
)
ODD: tuple[Any, ...] = (
    float("nan"),
    float("inf"),
    np.int64(1),
    np.float32(0.5),
    b"a",
    (1, 2),
    {1, 2},
    object(),
    [[1]],
    [1, "a"],
    {"x": 1},
    {},
)
TYPES = ("str", "int", "float", "number", "bool", "list[str]", "list[int]", "date", 3)


def scalar(fdp: atheris.FuzzedDataProvider, odd: bool) -> Any:
    if odd and fdp.ConsumeIntInRange(0, 9) == 0:
        return fdp.PickValueInList(list(ODD))
    return fdp.PickValueInList(list(SCALARS))


def operand(fdp: atheris.FuzzedDataProvider, depth: int) -> Any:
    pick = fdp.ConsumeIntInRange(0, 5)
    if pick == 0:
        return [scalar(fdp, True) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    if pick == 1 and depth < 6:
        return condition(fdp, depth + 1)
    return scalar(fdp, True)


def condition(fdp: atheris.FuzzedDataProvider, depth: int) -> Any:
    if fdp.ConsumeBool():
        return scalar(fdp, True)
    return {
        fdp.PickValueInList(list(OPERATORS)): operand(fdp, depth)
        for _ in range(fdp.ConsumeIntInRange(0, 2))
    }


def spec_of(fdp: atheris.FuzzedDataProvider, depth: int = 0) -> Any:
    """A filter: field conditions and logical operators, nested up to 6 levels."""
    out: dict[Any, Any] = {}
    for _ in range(fdp.ConsumeIntInRange(0, 3)):
        pick = fdp.ConsumeIntInRange(0, 9)
        if pick < 5 or depth >= 6:
            key: Any = fdp.PickValueInList(list(FIELDS))
            if fdp.ConsumeIntInRange(0, 20) == 0:
                key = fdp.PickValueInList([1, None, ("a",)])
            out[key] = condition(fdp, depth)
        elif pick < 7:
            key = fdp.PickValueInList(["$and", "$or", "$nor"])
            items = [spec_of(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
            out[key] = items if fdp.ConsumeIntInRange(0, 9) else tuple(items)
        elif pick < 9:
            out["$not"] = spec_of(fdp, depth + 1)
        else:
            out[fdp.PickValueInList(list(OPERATORS))] = operand(fdp, depth)
    if fdp.ConsumeIntInRange(0, 30) == 0:
        return fdp.PickValueInList([None, [out], "a", 3])
    return out


def nested(fdp: atheris.FuzzedDataProvider, spec: Any) -> Any:
    """``spec`` under a long chain of ``$not``, ``$and`` or field-level ``$not``."""
    depth = fdp.ConsumeIntInRange(0, 3000)
    kind = fdp.ConsumeIntInRange(0, 2)
    inner: Any = {"$gt": 1}
    for _ in range(depth):
        if kind == 0:
            spec = {"$not": spec}
        elif kind == 1:
            spec = {"$and": [spec]}
        else:
            inner = {"$not": inner}
    return {"a": inner} if kind == 2 else spec


def record_of(fdp: atheris.FuzzedDataProvider) -> Any:
    if fdp.ConsumeIntInRange(0, 9) == 0:
        return None
    out = {}
    for _ in range(fdp.ConsumeIntInRange(0, 3)):
        field = fdp.PickValueInList(["a", "tags", "ü"])
        pick = fdp.ConsumeIntInRange(0, 5)
        if pick == 0:
            out[field] = [
                fdp.PickValueInList(["", "a", "b", "é", "\x00"])
                for _ in range(fdp.ConsumeIntInRange(0, 3))
            ]
        elif pick == 1:
            out[field] = [
                fdp.PickValueInList([0, 1, 2, -1, 2**53])
                for _ in range(fdp.ConsumeIntInRange(0, 3))
            ]
        else:
            out[field] = scalar(fdp, fdp.ConsumeIntInRange(0, 30) == 0)
    return out


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    records = [record_of(fdp) for _ in range(fdp.ConsumeIntInRange(1, 12))]
    columns = refused(lambda: MetadataColumns.from_records(records))
    spec = spec_of(fdp)
    deep = fdp.ConsumeIntInRange(0, 7) == 0
    if deep:
        spec = nested(fdp, spec)
    schema = None
    if fdp.ConsumeIntInRange(0, 3) == 0:
        schema = {
            fdp.PickValueInList(list(FIELDS)): fdp.PickValueInList(list(TYPES))
            for _ in range(fdp.ConsumeIntInRange(0, 3))
        }
    compiled = refused(lambda: Filter.compile(spec, schema))
    if compiled is None or columns is None:
        return
    mask = compiled.mask(columns)
    repr(compiled)
    if deep:
        return  # the oracle recurses as deep as the filter
    if not isinstance(mask, np.ndarray) or mask.dtype != bool or mask.shape != (len(records),):
        raise Unexpected(f"mask {mask!r}")
    expected = [matches(spec, record) for record in records]
    if mask.tolist() != expected:
        raise Unexpected(f"{spec!r} on {records!r}: mask {mask.tolist()}, expected {expected}")


if __name__ == "__main__":
    main(one_input, sys.argv)
