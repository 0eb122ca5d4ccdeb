"""Filter: every mask equals a pure-Python evaluator of the dialect (written from the semantics
of docs/filters.md, not from the implementation), on random records and random filters; each
operator by example; every refusal and its message; masks are whole-array work."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_engine.metadata import Filter, MetadataColumns

# --- The oracle: the dialect over one record (a dict, or None for no metadata) ---------------

RANGE_TESTS: dict[str, Callable[[Any, Any], bool]] = {
    "$gt": lambda v, x: v > x,
    "$gte": lambda v, x: v >= x,
    "$lt": lambda v, x: v < x,
    "$lte": lambda v, x: v <= x,
}


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def value_equals(value: object, operand: object) -> bool:
    """One stored value against an operand: bools only with bools, numbers by value with
    numbers, str with str, None with None."""
    if operand is None:
        return value is None
    if isinstance(operand, bool):
        return isinstance(value, bool) and value == operand
    if is_number(operand):
        return is_number(value) and value == operand
    return isinstance(value, str) and value == operand


def value_compares(value: object, op: str, operand: object) -> bool:
    """One stored value in a range test: numbers with numbers, str with str, else False."""
    same_kind = isinstance(value, str) if isinstance(operand, str) else is_number(value)
    return same_kind and RANGE_TESTS[op](value, operand)


def items(record: dict[str, Any], field: str) -> list[Any] | None:
    """The values of ``field`` (a scalar is one value, a list its items); None when absent."""
    if field not in record:
        return None
    value = record[field]
    return value if isinstance(value, list) else [value]


def equals(record: dict[str, Any], field: str, operand: object) -> bool:
    values = items(record, field)
    if values is None:  # a missing field equals None only
        return operand is None
    return any(value_equals(v, operand) for v in values)


def condition_holds(record: dict[str, Any], field: str, condition: object) -> bool:
    if not isinstance(condition, dict):
        return equals(record, field, condition)
    return all(operator_holds(record, field, op, arg) for op, arg in condition.items())


def operator_holds(record: dict[str, Any], field: str, op: str, arg: Any) -> bool:
    if op == "$eq":
        return equals(record, field, arg)
    if op == "$ne":
        return not equals(record, field, arg)
    if op == "$in":
        return any(equals(record, field, x) for x in arg)
    if op == "$nin":
        return not any(equals(record, field, x) for x in arg)
    if op == "$exists":
        return (field in record) is arg
    if op == "$not":
        return not condition_holds(record, field, arg)
    return any(value_compares(v, op, arg) for v in items(record, field) or [])


def matches(spec: dict[str, Any], record: dict[str, Any] | None) -> bool:
    record = record or {}
    for key, value in spec.items():
        if key == "$and":
            holds = all(matches(s, record) for s in value)
        elif key == "$or":
            holds = any(matches(s, record) for s in value)
        elif key == "$not":
            holds = not matches(value, record)
        else:
            holds = condition_holds(record, key, value)
        if not holds:
            return False
    return True


# --- Random records and filters over shared pools, so that operands hit stored values --------

FIELDS = ["a", "tags", "ü"]
STRINGS = ["", "a", "b", "é", "😀", "\x00", "\ud800", "\uffff"]
INTS = [0, 1, 2, 2**53, -(2**53)]
FLOATS = [-0.0, 0.5, 1.0, 1e300, 5e-324, 2.0**53]
# Operands are drawn from small pools that records share, so that they hit stored values
# (sampled_from: each pooled value equally likely); records also get arbitrary values.
strings = st.sampled_from(STRINGS)
ints = st.sampled_from(INTS)
comparables = st.sampled_from([*STRINGS, *INTS, *FLOATS])
scalars = st.sampled_from([None, True, False, *STRINGS, *INTS, *FLOATS])
stored = st.text(max_size=2) | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False)
values = st.one_of(scalars, st.lists(strings, max_size=3), st.lists(ints, max_size=3), stored)
records = st.lists(
    st.none() | st.dictionaries(st.sampled_from(FIELDS), values, min_size=1, max_size=3),
    min_size=8,
    max_size=30,
)

OPERANDS = {
    "$eq": scalars,
    "$ne": scalars,
    "$in": st.lists(scalars, min_size=1, max_size=4),
    "$nin": st.lists(scalars, min_size=1, max_size=4),
    **dict.fromkeys(RANGE_TESTS, comparables),
    "$exists": st.booleans(),
}
# Each operator equally likely, then its operand.
operator_entries = st.sampled_from(list(OPERANDS)).flatmap(
    lambda op: st.tuples(st.just(op), OPERANDS[op])
)
operator_dicts = st.recursive(
    st.lists(operator_entries, min_size=1, max_size=2).map(dict),
    lambda inner: st.lists(
        operator_entries | st.tuples(st.just("$not"), inner), min_size=1, max_size=2
    ).map(dict),
    max_leaves=3,
)
# A literal (wrapped, so that one_of weighs it as one branch) or operators, even odds.
conditions = st.one_of(scalars.map(lambda x: x), operator_dicts)
field_filters = st.dictionaries(
    st.sampled_from([*FIELDS, *FIELDS, "absent"]), conditions, min_size=1, max_size=2
)
filters = st.recursive(
    field_filters,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"$and": xs}),
        st.lists(inner, min_size=1, max_size=3).map(lambda xs: {"$or": xs}),
        inner.map(lambda x: {"$not": x}),
        st.tuples(field_filters, inner).map(lambda p: {**p[0], "$or": [p[1]]}),
    ),
    max_leaves=4,
)


def test_every_operator_and_operand_on_a_fixed_corpus() -> None:
    """Each operator with each pooled operand, over 300 seeded random records of every kind."""
    rng = np.random.default_rng(0)
    pool: list[Any] = [None, True, False, *STRINGS, *INTS, *FLOATS]

    def value() -> Any:
        shape = rng.integers(4)
        if shape == 0:
            return [str(rng.choice(STRINGS)) for _ in range(rng.integers(4))]
        if shape == 1:
            return [int(rng.choice(INTS)) for _ in range(rng.integers(4))]
        return pool[rng.integers(len(pool))]

    batch = [
        {f: value() for f in FIELDS if rng.random() < 0.7} if rng.random() < 0.9 else None
        for _ in range(300)
    ]
    columns = MetadataColumns.from_records(batch)
    specs: list[dict[str, Any]] = [{f: {"$exists": e}} for f in FIELDS for e in (True, False)]
    for x in pool:
        for f in FIELDS:
            specs += [{f: x}, {f: {"$ne": x}}, {f: {"$in": [x, "b"]}}, {f: {"$nin": [x, 1]}}]
            if x is not None and not isinstance(x, bool):
                specs += [{f: {op: x}} for op in RANGE_TESTS]
                specs.append({f: {"$not": {"$gte": x}}})
    for spec in specs:
        expected = [matches(spec, r) for r in batch]
        assert Filter.compile(spec).mask(columns).tolist() == expected, spec


@settings(max_examples=400, deadline=None)
@given(records, filters)
def test_masks_equal_the_oracle(batch: list[dict[str, Any] | None], spec: dict[str, Any]) -> None:
    columns = MetadataColumns.from_records(batch)
    mask = Filter.compile(spec).mask(columns)
    assert mask.dtype == bool and mask.shape == (len(batch),)
    assert mask.tolist() == [matches(spec, r) for r in batch], Filter.compile(spec)


@settings(max_examples=300, deadline=None)
@given(records, st.sampled_from(FIELDS), operator_dicts)
def test_field_conditions_equal_the_oracle(
    batch: list[dict[str, Any] | None], field: str, condition: dict[str, Any]
) -> None:
    """One field's operators alone, where every boundary shows."""
    spec = {field: condition}
    mask = Filter.compile(spec).mask(MetadataColumns.from_records(batch))
    assert mask.tolist() == [matches(spec, r) for r in batch]


@settings(max_examples=60, deadline=None)
@given(records, records, filters)
def test_masks_survive_saving_and_merging(
    first: list[dict[str, Any] | None], second: list[dict[str, Any] | None], spec: dict[str, Any]
) -> None:
    """Each segment has its own dictionary: masks of loaded, merged and selected columns
    still equal the oracle."""
    where = Filter.compile(spec)
    merged = MetadataColumns.concat(
        [MetadataColumns.from_records(first), MetadataColumns.from_records(second)]
    )
    loaded = MetadataColumns.from_arrays(*merged.to_arrays(), len(merged))
    expected = [matches(spec, r) for r in first + second]
    assert where.mask(loaded).tolist() == expected
    order = np.random.default_rng(len(first)).permutation(len(merged))
    assert where.mask(merged.take(order)).tolist() == [expected[i] for i in order]


# --- Each operator by example ----------------------------------------------------------------

DOCS: list[dict[str, Any] | None] = [
    {"year": 2020, "lang": "en", "tags": ["a", "b"], "score": 0.5, "ok": True},
    {"year": 2021.0, "lang": "fr", "tags": [], "score": None, "ok": False},
    {"year": "2022", "lang": "de", "tags": ["c"], "ids": [1, 5]},
    {"lang": None, "ok": 1},
    None,
]
COLUMNS = MetadataColumns.from_records(DOCS)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({}, [0, 1, 2, 3, 4]),
        ({"year": 2020}, [0]),
        ({"year": {"$eq": 2021}}, [1]),  # int and float compare by value
        ({"year": "2022"}, [2]),  # a str never equals a number
        ({"tags": "b"}, [0]),  # a list matches when an item does
        ({"ids": {"$in": [5, 9]}}, [2]),
        ({"lang": {"$in": ["de", "en"]}}, [0, 2]),
        ({"lang": {"$nin": ["de", "en"]}}, [1, 3, 4]),  # $nin matches missing fields
        ({"tags": {"$ne": "a"}}, [1, 2, 3, 4]),  # no item equal, or no field
        ({"ok": True}, [0]),  # bool is not int: 1 is not True
        ({"ok": 1}, [3]),
        ({"ok": {"$ne": False}}, [0, 2, 3, 4]),
        ({"lang": None}, [3, 4]),  # None or missing
        ({"score": None}, [1, 2, 3, 4]),
        ({"score": {"$ne": None}}, [0]),
        ({"lang": {"$in": [None]}}, [3, 4]),
        ({"score": {"$exists": True}}, [0, 1]),  # a None value exists
        ({"tags": {"$exists": True}}, [0, 1, 2]),  # so does an empty list
        ({"tags": {"$exists": False}}, [3, 4]),
        ({"year": {"$gt": 2020}}, [1]),  # the str "2022" is not a number
        ({"year": {"$gte": 2020, "$lt": 2021}}, [0]),  # several operators: all hold
        ({"year": {"$lte": 2021.0}}, [0, 1]),
        ({"lang": {"$gt": "de"}}, [0, 1]),  # code point order
        ({"lang": {"$lt": "en"}}, [2]),
        ({"lang": {"$gte": "É"}}, []),
        ({"tags": {"$gte": "b", "$lte": "c"}}, [0, 2]),  # any item, per operator
        ({"ids": {"$gt": 4}}, [2]),
        ({"year": {"$not": {"$gte": 2021}}}, [0, 2, 3, 4]),  # field-level $not
        ({"$not": {"year": 2020}}, [1, 2, 3, 4]),
        ({"$and": [{"lang": {"$exists": True}}, {"ok": {"$in": [True, 1]}}]}, [0, 3]),
        ({"$or": [{"year": 2020}, {"ids": 1}]}, [0, 2]),
        ({"lang": "en", "$or": [{"ok": True}, {"ok": 1}]}, [0]),  # keys: implicit AND
        ({"lang": {"$in": []}}, []),
        ({"lang": {"$nin": []}}, [0, 1, 2, 3, 4]),
        ({"nowhere": None}, [0, 1, 2, 3, 4]),
        ({"nowhere": {"$gt": 0}}, []),
    ],
)
def test_operator_examples(spec: dict[str, Any], expected: list[int]) -> None:
    mask = Filter.compile(spec).mask(COLUMNS)
    assert np.flatnonzero(mask).tolist() == expected
    assert mask.tolist() == [matches(spec, r) for r in DOCS]


MISSING = object()
SEMANTICS_TABLE: list[tuple[Any, str]] = [  # docs/filters.md: a stored value, its row
    (2, "yes no yes no yes"),
    (2.0, "yes no yes no yes"),
    ("2", "no yes no no yes"),
    (True, "no yes no no yes"),
    ([5, 2], "yes no yes no yes"),
    ([], "no yes no no yes"),
    (None, "no yes no yes yes"),
    (MISSING, "no yes no yes no"),
]


def test_the_semantics_table_of_the_docs() -> None:
    batch = [{} if v is MISSING else {"f": v} for v, _ in SEMANTICS_TABLE]
    columns = MetadataColumns.from_records(batch)
    specs = [{"f": 2}, {"f": {"$ne": 2}}, {"f": {"$gt": 1}}, {"f": None}, {"f": {"$exists": True}}]
    got = [Filter.compile(spec).mask(columns) for spec in specs]
    for row, (stored, expected) in enumerate(SEMANTICS_TABLE):
        assert " ".join("yes" if g[row] else "no" for g in got) == expected, stored
    items = MetadataColumns.from_records([{"tags": ["a", "z"]}])
    assert Filter.compile({"tags": {"$gte": "b", "$lte": "c"}}).mask(items).tolist() == [True]


def test_string_operands_resolve_per_segment() -> None:
    """The same filter on two segments whose dictionaries differ."""
    where = Filter.compile({"lang": {"$gt": "b", "$ne": "fr"}})
    one = MetadataColumns.from_records([{"lang": "a"}, {"lang": "c"}, {"lang": "fr"}])
    two = MetadataColumns.from_records([{"lang": "fr"}, {"lang": "zz"}, {"lang": "b"}])
    assert where.mask(one).tolist() == [False, True, False]
    assert where.mask(two).tolist() == [False, True, False]
    assert where.mask(MetadataColumns.empty(2)).tolist() == [False, False]
    assert where.mask(MetadataColumns.empty(0)).shape == (0,)


def test_fields_repr_and_compiled_filters() -> None:
    where = Filter.compile({"year": {"$gte": 2020}, "$or": [{"tags": {"$nin": ["x"]}}, {"b": 1}]})
    assert where.fields == ("b", "tags", "year")
    assert repr(where) == "Filter(year >= 2020 and (not (tags in ['x']) or b == 1))"
    assert Filter.compile(where) is where
    assert repr(Filter.compile({})) == "Filter(every document)"


def test_schema_accepts_comparable_operands() -> None:
    schema = {"year": "int", "lang": "str", "tags": "list[str]", "ok": "bool", "ids": "list[int]"}
    spec = {"year": {"$gt": 2020.5}, "tags": "a", "ok": None, "ids": {"$in": [1, 2.0]}}
    assert Filter.compile(spec, schema).fields == ("ids", "ok", "tags", "year")
    assert Filter.compile({"lang": {"$exists": False}}, schema).mask(COLUMNS).tolist() == [
        False,
        False,
        False,
        False,
        True,
    ]


# --- Refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ([("a", 1)], TypeError, "the filter must be a dict of field conditions"),
        ({"a": {"$regex": "x"}}, ValueError, "field 'a': unknown operator '\\$regex'"),
        ({"a": {"$gtee": 1}}, ValueError, "unknown operator '\\$gtee'; a field's operators are"),
        ({"$nor": [{"a": 1}]}, ValueError, "unknown operator '\\$nor' in the filter"),
        ({"$gt": 1}, ValueError, "\\$gt is a field operator: put it in a field's condition"),
        ({"$or": [{"$in": [1]}]}, ValueError, "not directly in item 0 of \\$or"),
        ({"a": {"$or": [{"a": 1}]}}, ValueError, "field 'a': \\$or is a logical operator"),
        ({"a": {"x": 1}}, ValueError, "field 'a': 'x' is not an operator"),
        ({"a": {}}, ValueError, "field 'a': empty condition"),
        ({"": 1}, ValueError, "empty field name"),
        ({1: 1}, TypeError, "field names are str, got int"),
        (
            {"a": [1, 2]},
            ValueError,
            "field 'a': \\$eq with a list .* use \\{\"\\$in\": \\[1, 2\\]\\}",
        ),
        ({"a": {"$ne": ["x"]}}, ValueError, "field 'a': \\$ne with a list"),
        ({"a": {"$in": "xy"}}, TypeError, "field 'a': \\$in takes a list of values, got str"),
        ({"a": {"$nin": ("x",)}}, TypeError, "field 'a': \\$nin takes a list of values"),
        ({"a": {"$in": [["x"]]}}, TypeError, "field 'a': the items of \\$in are single values"),
        ({"a": {"$in": [{"b": 1}]}}, TypeError, "field 'a', \\$in: dict .* is not a metadata"),
        ({"$and": []}, ValueError, "\\$and takes a non-empty list of filter dicts, got \\[\\]"),
        ({"$or": {"a": 1}}, TypeError, "\\$or takes a list of filter dicts, got dict"),
        ({"$and": [1]}, TypeError, "item 0 of \\$and must be a dict of field conditions"),
        ({"$not": [{"a": 1}]}, TypeError, "the operand of \\$not must be a dict"),
        ({"a": {"$not": 3}}, TypeError, "field 'a': \\$not takes a dict of operators"),
        ({"a": {"$gt": True}}, TypeError, "field 'a': \\$gt compares numbers or strings, got bool"),
        ({"a": {"$lt": None}}, TypeError, "field 'a': \\$lt compares numbers or strings"),
        (
            {"a": {"$gte": [1]}},
            TypeError,
            "field 'a': \\$gte compares numbers or strings, got list",
        ),
        ({"a": {"$lte": {"x": 1}}}, TypeError, "field 'a': \\$lte compares numbers or strings"),
        ({"a": {"$exists": 1}}, TypeError, "field 'a': \\$exists takes true or false"),
        ({"a": b"x"}, TypeError, "field 'a', \\$eq: bytes b'x' is not a metadata value"),
        ({"a": {"$eq": np.int64(3)}}, TypeError, "int64 .* is not a metadata value"),
        ({"a": 2**53 + 1}, ValueError, "field 'a', \\$eq: the int 9007199254740993 lies outside"),
        ({"a": {"$gt": float("nan")}}, ValueError, "field 'a', \\$gt: nan is not a finite"),
        ({"a": {"$in": [float("inf")]}}, ValueError, "inf is not a finite float"),
    ],
)
def test_refusals_name_the_problem(spec: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        Filter.compile(spec)


@pytest.mark.parametrize(
    ("spec", "schema", "error", "message"),
    [
        ({"b": 1}, {"a": "int"}, ValueError, "unknown field 'b'; the schema declares \\['a'\\]"),
        ({"$or": [{"b": 1}]}, {"a": "int"}, ValueError, "unknown field 'b'"),
        ({"a": "x"}, {"a": "int"}, TypeError, "field 'a' is int in the schema; the str 'x'"),
        ({"a": {"$gt": 1}}, {"a": "str"}, TypeError, "field 'a' is str in the schema; the int"),
        ({"a": {"$in": [True]}}, {"a": "number"}, TypeError, "the bool True of \\$in cannot"),
        ({"a": 1}, {"a": "bool"}, TypeError, "field 'a' is bool in the schema"),
        ({"a": {"$lt": 1.5}}, {"a": "list[str]"}, TypeError, "list\\[str\\] in the schema"),
        ({"a": {"$ne": "x"}}, {"a": "list[int]"}, TypeError, "list\\[int\\] in the schema"),
        ({"a": 1}, {"a": "integer"}, ValueError, "field 'a' has type 'integer'; choose one of"),
        ({"a": 1}, [("a", "int")], TypeError, "schema must be a dict of field to type"),
        ({"a": 1}, {"a": ["int"]}, ValueError, "field 'a' has type \\['int'\\]; choose one"),
    ],
)
def test_schema_refusals(spec: Any, schema: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        Filter.compile(spec, schema)


def test_mask_needs_columns() -> None:
    with pytest.raises(TypeError, match="expected MetadataColumns, got list"):
        Filter.compile({"a": 1}).mask([{"a": 1}])  # type: ignore[arg-type]


# --- Whole-array work ------------------------------------------------------------------------


def python_lines(work: Callable[[], object]) -> int:
    """How many lines of Python ``work`` runs (numpy's C loops not counted)."""
    lines = 0

    def trace(frame: object, event: str, arg: object) -> Callable[..., object]:
        nonlocal lines
        lines += event == "line"
        return trace

    sys.settrace(trace)  # type: ignore[arg-type]
    try:
        work()
    finally:
        sys.settrace(None)
    return lines


def test_a_mask_over_100k_documents_loops_over_no_document() -> None:
    """A few hundred lines of Python for 100,000 documents: numpy does the per-document
    work. The mask equals one computed with plain numpy from the records' sources."""
    rng = np.random.default_rng(0)
    n = 100_000
    years = rng.integers(1990, 2030, n)
    langs = rng.choice(["en", "fr", "de", "ja"], n)
    has_tags = rng.random(n) < 0.7
    batch = [
        {"year": int(y), "lang": str(lang), **({"tags": ["x", str(lang)]} if t else {})}
        for y, lang, t in zip(years, langs, has_tags)
    ]
    where = Filter.compile(
        {
            "year": {"$gte": 2000, "$lt": 2020},
            "$or": [{"lang": {"$in": ["fr", "ja"]}}, {"tags": {"$exists": False}}],
            "tags": {"$ne": "de"},
        }
    )
    columns = MetadataColumns.from_records(batch)
    expected = (years >= 2000) & (years < 2020) & (np.isin(langs, ["fr", "ja"]) | ~has_tags)
    expected &= ~(has_tags & (langs == "de"))
    np.testing.assert_array_equal(where.mask(columns), expected)
    assert python_lines(lambda: where.mask(columns)) < n / 100
