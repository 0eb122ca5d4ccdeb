"""MetadataColumns: records come back exactly (types included) from the columns, from saved
arrays and through take/concat, which give the same arrays as building from the taken
records; bad records are refused by position and field; corrupted arrays are refused with a
ValueError naming the field, never another exception."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_engine.metadata import Filter, MetadataColumns
from hybrid_engine.packed import pack_utf8
from hybrid_engine.storage import read_index_dir, write_index_dir

Record = dict[str, Any] | None


def typed(value: object) -> object:
    """``value`` with its type spelled out, so that 1, 1.0, True and -0.0, 0.0 differ."""
    if isinstance(value, list):
        return ["list", [typed(item) for item in value]]
    return [type(value).__name__, repr(value)]


def typed_records(records: list[Record]) -> list[dict[str, object]]:
    """Each record (None as no fields) with typed values, keys in sorted order."""
    return [{k: typed(v) for k, v in sorted((r or {}).items())} for r in records]


def assert_same_columns(got: MetadataColumns, expected: MetadataColumns) -> None:
    """The same saved arrays, byte for byte, and the same description."""
    got_arrays, got_description = got.to_arrays()
    expected_arrays, expected_description = expected.to_arrays()
    assert got_description == expected_description
    assert got_arrays.keys() == expected_arrays.keys()
    for name, array in got_arrays.items():
        assert array.dtype == expected_arrays[name].dtype, name
        assert array.tobytes() == expected_arrays[name].tobytes(), name


field_names = st.sampled_from(["a", "b", "ü", "tags", "x.y"]) | st.text(min_size=1, max_size=3)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4)
)
values = (
    scalars | st.lists(st.text(max_size=3), max_size=3) | st.lists(st.integers(-5, 5), max_size=3)
)
records = st.lists(
    st.none()
    | st.dictionaries(field_names.filter(lambda s: not s.startswith("$")), values, max_size=4),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(records)
def test_records_round_trip_exactly(batch: list[Record]) -> None:
    columns = MetadataColumns.from_records(batch)
    assert len(columns) == len(batch)
    assert typed_records(columns.records(range(len(batch)))) == typed_records(batch)
    assert columns.fields == tuple(sorted({k for r in batch if r for k in r}))
    arrays, description = columns.to_arrays()
    assert json.loads(json.dumps(description)) == description
    assert all(re.fullmatch(r"meta_\d+_[a-z_]+", name) for name in arrays)
    assert {a.dtype for a in arrays.values()} <= {np.dtype(t) for t in "u1 i4 i8 f8".split()}
    loaded = MetadataColumns.from_arrays(arrays, json.loads(json.dumps(description)), len(batch))
    assert typed_records(loaded.records(np.arange(len(batch)))) == typed_records(batch)
    for field in columns.fields:
        assert loaded.kinds(field) == columns.kinds(field)


@settings(max_examples=100, deadline=None)
@given(records, st.data())
def test_take_equals_building_from_the_taken_records(batch: list[Record], data: Any) -> None:
    picks = data.draw(st.lists(st.integers(0, max(len(batch) - 1, 0)), max_size=15))
    positions = np.array(picks if batch else [], dtype=np.int64)
    taken = MetadataColumns.from_records(batch).take(positions)
    assert_same_columns(taken, MetadataColumns.from_records([batch[i] for i in positions]))


@settings(max_examples=100, deadline=None)
@given(st.lists(records, max_size=4))
def test_concat_equals_building_from_the_joined_records(parts: list[list[Record]]) -> None:
    joined = MetadataColumns.concat([MetadataColumns.from_records(p) for p in parts])
    assert_same_columns(joined, MetadataColumns.from_records([r for p in parts for r in p]))


def test_kinds_records_and_empty_columns() -> None:
    columns = MetadataColumns.from_records(
        [{"n": 1, "s": ["a"], "e": []}, {"n": 2.5, "s": None, "b": False}, None, {}]
    )
    assert columns.fields == ("b", "e", "n", "s")
    assert columns.kinds("n") == {"int", "float"}
    assert columns.kinds("s") == {"str", "null", "list"}
    assert columns.kinds("e") == {"list"}  # an empty list adds no item kind
    assert columns.kinds("b") == {"bool"} and columns.kinds("nowhere") == frozenset()
    assert columns.record(-4) == {"n": 1, "s": ["a"], "e": []}
    assert columns.record(2) == {} and columns.record(3) == {}
    assert repr(columns) == "MetadataColumns(n=4, fields=['b', 'e', 'n', 's'])"
    with pytest.raises(IndexError, match="position 4 out of range for 4 documents"):
        columns.record(4)
    empty = MetadataColumns.empty(3)
    assert len(empty) == 3 and empty.fields == () and empty.records([0, 2]) == [{}, {}]
    assert MetadataColumns.from_arrays(*empty.to_arrays(), 3).records(range(3)) == [{}] * 3
    assert len(MetadataColumns.concat([])) == 0
    assert columns.take(np.array([2, 3], np.int64)).fields == ()  # fields of no document go


def test_saved_through_an_index_directory_and_memory_mapped(tmp_path: Path) -> None:
    batch: list[Record] = [{"lang": "é", "ids": [3, 1]}, None, {"lang": "en", "score": 0.25}]
    arrays, description = MetadataColumns.from_records(batch).to_arrays()
    write_index_dir(tmp_path / "segment", "metadata-test", 1, {"metadata": description}, arrays)
    manifest, loaded = read_index_dir(tmp_path / "segment", "metadata-test", 1, mmap=True)
    columns = MetadataColumns.from_arrays(loaded, manifest["metadata"], 3)
    assert columns.records(range(3)) == [{"ids": [3, 1], "lang": "é"}, {}, batch[2]]
    assert Filter.compile({"lang": {"$gt": "en"}}).mask(columns).tolist() == [True, False, False]


@pytest.mark.parametrize(
    ("batch", "error", "message"),
    [
        ([("a", 1)], TypeError, "document 0: metadata must be a mapping"),
        ([None, {1: "x"}], TypeError, "document 1: field names are str, got int"),
        ([{"": 1}], ValueError, "document 0: field name '' must be a non-empty str"),
        ([{"$a": 1}], ValueError, "document 0: field name '\\$a' must be .* not starting with"),
        ([{"a": {"b": 1}}], TypeError, "document 0, field 'a': dict .* is not a metadata value"),
        ([{"a": (1, 2)}], TypeError, "document 0, field 'a': tuple"),
        ([{"a": b"x"}], TypeError, "field 'a': bytes b'x' is not a metadata value"),
        ([{}, {"a": np.int64(3)}], TypeError, "document 1, field 'a': int64 .* \\.item\\(\\)"),
        ([{"a": 2**53 + 1}], ValueError, "field 'a': the int 9007199254740993 lies outside"),
        ([{"a": -(2**60)}], ValueError, "lies outside ±2\\*\\*53"),
        ([{"a": float("nan")}], ValueError, "field 'a': nan is not a finite float"),
        ([{"a": float("-inf")}], ValueError, "field 'a': -inf is not a finite float"),
        ([{"a": ["x", 1]}], TypeError, "field 'a': the list mixes str and int"),
        ([{"a": [[1]]}], TypeError, "field 'a', list item 0: list .* only str or only int"),
        ([{"a": [True]}], TypeError, "field 'a', list item 0: bool"),
        ([{"a": [1.5]}], TypeError, "field 'a', list item 0: float"),
        ([{"a": ["x", None]}], TypeError, "field 'a', list item 1: NoneType"),
        ([{"a": [2**53 + 1]}], ValueError, "field 'a', list item 0: the int"),
    ],
)
def test_bad_records_are_refused(batch: list[Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        MetadataColumns.from_records(batch)


@pytest.mark.parametrize(
    ("positions", "error", "message"),
    [
        ([0, 1], TypeError, "1-d numpy array of int"),
        (np.zeros((1, 1), np.int64), TypeError, "1-d numpy array of int"),
        (np.array([0.0]), TypeError, "1-d numpy array of int"),
        (np.array([0, 2], np.int64), IndexError, "positions must lie in \\[0, 2\\)"),
        (np.array([-1], np.int64), IndexError, "positions must lie in \\[0, 2\\)"),
    ],
)
def test_take_refuses_bad_positions(positions: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        MetadataColumns.from_records([{"a": 1}, None]).take(positions)


# --- Corrupted saves ---------------------------------------------------------------------------

BATCH: list[Record] = [
    {"year": 2020, "tags": ["a", "b"], "lang": "en", "ok": True, "x": None},
    {"year": 2.5, "tags": []},
    None,
    {"lang": "fr", "ids": [1, 2]},
]
# Fields by position: 0 ids, 1 lang, 2 ok, 3 tags, 4 x, 5 year.
SAVED = MetadataColumns.from_records(BATCH).to_arrays()

Corruption = Callable[[dict[str, Any], dict[str, Any]], None]


def setting(name: str, value: Any) -> Corruption:
    def corrupt(arrays: dict[str, Any], description: dict[str, Any]) -> None:
        arrays[name] = value

    return corrupt


def described(change: Callable[[dict[str, Any]], None]) -> Corruption:
    def corrupt(arrays: dict[str, Any], description: dict[str, Any]) -> None:
        change(description)

    return corrupt


def dropping(name: str) -> Corruption:
    def corrupt(arrays: dict[str, Any], description: dict[str, Any]) -> None:
        del arrays[name]

    return corrupt


def dictionary(strings: list[str] | bytes, offsets: list[int]) -> Corruption:
    """lang's dictionary replaced by these bytes (or strings, packed) and offsets."""
    data = pack_utf8(strings)[0] if isinstance(strings, list) else np.frombuffer(strings, np.uint8)

    def corrupt(arrays: dict[str, Any], description: dict[str, Any]) -> None:
        arrays["meta_1_strings_bytes"] = data
        arrays["meta_1_strings_offsets"] = np.array(offsets, np.int64)

    return corrupt


def fields_swapped(description: dict[str, Any]) -> None:
    fields = description["fields"]
    fields[0], fields[1] = fields[1], fields[0]


def absent_x(arrays: dict[str, Any], description: dict[str, Any]) -> None:
    """Field x (one None) stored as held by no document."""
    arrays.update(
        meta_4_state=np.zeros(4, np.uint8),
        meta_4_offsets=np.zeros(5, np.int64),
        meta_4_kinds=np.zeros(0, np.uint8),
        meta_4_numbers=np.zeros(0, np.float64),
        meta_4_codes=np.zeros(0, np.int32),
    )


CORRUPTIONS: list[tuple[Corruption, str]] = [
    (dropping("meta_3_codes"), "field 'tags': array meta_3_codes is missing"),
    (dropping("meta_1_strings_bytes"), "field 'lang': meta_1_strings_bytes and .* numpy arrays"),
    (setting("meta_3_offsets", np.array([0, 2, 2, 2, 2], np.int32)), "1-d int64 array, got int32"),
    (setting("meta_3_state", np.ones((4, 1), np.uint8)), "meta_3_state must be a 1-d uint8"),
    (setting("meta_3_state", [2, 2, 0, 0]), "meta_3_state must be a 1-d uint8 array, got list \\["),
    (setting("meta_3_state", np.ones(5, np.uint8)), "meta_3_state must hold 4 items, got 5"),
    (setting("meta_3_offsets", np.array([0, 2, 1, 2, 2])), "'tags': meta_3_offsets must rise"),
    (setting("meta_3_offsets", np.array([1, 2, 2, 2, 2])), "meta_3_offsets must rise .* from 0"),
    (setting("meta_3_offsets", np.array([0, 2, 2, 2, 3])), "meta_3_kinds must hold 3 items, got"),
    (setting("meta_3_offsets", np.array([0, 2, 2, 2, 2**62])), "meta_3_kinds must hold"),
    (setting("meta_3_codes", np.array([0, 2], np.int32)), "'tags': .* outside \\[0, 2\\)"),
    (
        setting("meta_3_codes", np.array([-1, 0], np.int32)),
        "'tags': meta_3_codes: a str value's code",
    ),
    (setting("meta_5_codes", np.array([0, -1], np.int32)), "'year': .* code is not -1"),
    (setting("meta_5_state", np.array([1, 1, 0, 3], np.uint8)), "'year': meta_5_state holds co"),
    (setting("meta_5_state", np.array([1, 0, 0, 0], np.uint8)), "a missing value items"),
    (setting("meta_0_state", np.array([0, 0, 0, 1], np.uint8)), "'ids': .* a scalar not one"),
    (setting("meta_5_kinds", np.array([2, 9], np.uint8)), "'year': meta_5_kinds holds codes"),
    (setting("meta_3_kinds", np.array([4, 2], np.uint8)), "'tags': .* a list holds another"),
    (setting("meta_0_kinds", np.array([3, 3], np.uint8)), "'ids': .* a list holds another"),
    (setting("meta_5_numbers", np.array([2020.5, 2.5])), "'year': .* an int value is not"),
    (setting("meta_5_numbers", np.array([2.0**60, 2.5])), "'year': .* an int value is not"),
    (setting("meta_5_numbers", np.array([np.nan, 2.5])), "'year': meta_5_numbers: not finite"),
    (setting("meta_2_numbers", np.array([2.0])), "'ok': .* a bool value is neither 0 nor 1"),
    (setting("meta_1_numbers", np.array([1.0, 0.0])), "'lang': .* not 0 for a str or None"),
    (dictionary(["fr", "en"], [0, 2, 4]), "'lang': meta_1_strings: .* not sorted and distinct"),
    (dictionary(["en", "en"], [0, 2, 4]), "'lang': .* not sorted and distinct"),
    (dictionary(b"e\xffnf", [0, 2, 4]), "'lang': meta_1_strings_bytes is not UTF-8"),
    (dictionary("éé".encode(), [0, 1, 4]), "'lang': meta_1_strings_offsets cut a UTF-8 char"),
    (dictionary(["en", "fr"], [0, 2, 5]), "'lang': .* do not hold 2 strings"),
    (dictionary(["en"], [0, 2]), "'lang': .* outside \\[0, 1\\)"),
    (setting("meta_1_strings_offsets", np.zeros(0, np.int64)), "'lang': .* do not hold 0"),
    (absent_x, "field 'x': no document holds the field"),
    (described(lambda d: d.update(documents=5)), "must be a dict of 'documents' \\(4\\)"),
    (described(lambda d: d.pop("arrays")), "a list of 'arrays'"),
    (described(lambda d: d["arrays"].pop()), "'arrays' are not those of its fields' prefixes"),
    (described(lambda d: d["arrays"].append(3)), "a list of 'arrays'"),
    (described(lambda d: d["fields"][5].update(kinds=["int"])), "'year': the description says"),
    (described(lambda d: d["fields"][5].update(kinds=["date"])), "kinds \\['date'\\] are not"),
    (described(lambda d: d["fields"][5].update(kinds=[["int"]])), "kinds \\[\\['int'\\]\\] are"),
    (described(fields_swapped), "field 'ids': fields must be distinct and sorted"),
    (described(lambda d: d["fields"].insert(1, d["fields"][0])), "fields must be distinct"),
    (described(lambda d: d["fields"][0].update(prefix="../x")), "'\\.\\./x' is not a file stem"),
    (described(lambda d: d["fields"][0].update(name="$ids")), "name '\\$ids' must be a non-empty"),
    (described(lambda d: d["fields"][0].update(name=7)), "field names are str, got int"),
    (described(lambda d: d["fields"][0].pop("kinds")), "expected 'name', 'kinds' and 'prefix'"),
    (described(lambda d: d.update(fields={})), "a list of 'fields'"),
]


@pytest.mark.parametrize(("corrupt", "message"), CORRUPTIONS)
def test_corrupted_saves_are_refused(corrupt: Corruption, message: str) -> None:
    arrays, description = dict(SAVED[0]), copy.deepcopy(SAVED[1])
    corrupt(arrays, description)
    with pytest.raises(ValueError, match=message):
        MetadataColumns.from_arrays(arrays, description, 4)


def test_a_description_that_is_not_a_dict_is_refused() -> None:
    with pytest.raises(ValueError, match="must be a dict of 'documents'"):
        MetadataColumns.from_arrays(SAVED[0], [], 4)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(SAVED[0])), st.data())
def test_any_changed_item_loads_or_is_refused(name: str, data: Any) -> None:
    """One item of one array changed, or the array cut short: a ValueError or columns whose
    records and masks work, never another exception."""
    array = SAVED[0][name].copy()
    if len(array) == 0 or data.draw(st.booleans()):
        array = array[: data.draw(st.integers(0, max(len(array) - 1, 0)))]
    else:
        index = data.draw(st.integers(0, len(array) - 1))
        if array.dtype.kind == "f":
            array[index] = data.draw(st.floats(width=64) | st.sampled_from([0.0, 1.0, 2020.0]))
        else:
            info = np.iinfo(array.dtype)
            array[index] = data.draw(
                st.integers(info.min, info.max) | st.integers(max(info.min, -2), 5)
            )
    arrays = {**SAVED[0], name: array}
    try:
        columns = MetadataColumns.from_arrays(arrays, SAVED[1], 4)
    except ValueError:
        return
    columns.records(range(4))
    for field in columns.fields:
        Filter.compile({field: {"$in": ["en", 1, None, True]}}).mask(columns)
        Filter.compile({field: {"$gte": "b"}}).mask(columns)
