"""Property tests of the HTTP request schema on arbitrary JSON (the atheris harness
``tests/fuzz/schemas.py`` checks the same contract, coverage-guided): any body, as JSON text
or raw bytes, is accepted or refused with a pydantic ValidationError for every request
model, and what is accepted meets only ValueError or TypeError in the engine's checks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

pytest.importorskip("atheris", reason="the fuzz extra: pip install -e .[fuzz]")

from tests.fuzz.schemas import KEYS, MODELS, downstream, one_input

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=16,
)
bodies = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(MODELS), bodies | json_values)
def test_any_json_body_validates_or_is_a_validation_error(model: Any, body: Any) -> None:
    try:
        request = model.model_validate_json(json.dumps(body))
    except ValidationError:
        return
    downstream(request)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(
    "raw", [b"", b"\xff\xfe", b"[", b'{"query": "\\ud800"}', b"NaN", b'{"k": 1e999}', b"\x00"]
)
def test_raw_bytes_are_a_validation_error(model: Any, raw: bytes) -> None:
    with pytest.raises(ValidationError):
        model.model_validate_json(raw)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600))
def test_the_fuzz_harness_on_random_bytes(data: bytes) -> None:
    one_input(data)
