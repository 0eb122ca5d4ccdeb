"""Property tests of the filter parser on arbitrary specs (the atheris harness
``tests/fuzz/filters.py`` checks the same contract, coverage-guided, against the dialect's
pure-Python evaluator): arbitrary JSON-like values compile or are refused with a ValueError
or TypeError; nesting deeper than the parser allows is a ValueError, not a RecursionError."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hybrid_engine.metadata import Filter, MetadataColumns

pytest.importorskip("atheris", reason="the fuzz extra: pip install -e .[fuzz]")

from tests.fuzz._harness import refused
from tests.fuzz.filters import OPERATORS, one_input

keys = st.sampled_from([*OPERATORS, "a", "tags", ""]) | st.text(max_size=3)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=12,
)
COLUMNS = MetadataColumns.from_records([{"a": 1, "tags": ["x"]}, None, {"a": "s"}])


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_any_json_value_compiles_or_is_refused(spec: Any) -> None:
    compiled = refused(lambda: Filter.compile(spec))
    if compiled is not None:
        assert compiled.mask(COLUMNS).shape == (3,)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_the_fuzz_harness_on_random_bytes(data: bytes) -> None:
    one_input(data)
