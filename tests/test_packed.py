"""PackedStrings (document ids, texts): round-trips, odd Unicode included; bad arrays fail."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hybrid_engine.packed import PackedStrings, pack_utf8


@given(st.lists(st.text()))
def test_every_text_round_trips(texts: list[str]) -> None:
    store = PackedStrings.from_strings(texts)
    assert len(store) == len(texts)
    assert list(store) == texts
    again = PackedStrings.from_arrays(store.arrays("text"), len(texts), "text")
    assert again[:] == texts


def test_lone_surrogates_and_negative_positions() -> None:
    store = PackedStrings.from_strings(["a\ud800b", "", "zürich"])
    assert store[0] == "a\ud800b" and store[1] == "" and store[-1] == "zürich"
    with pytest.raises(IndexError, match="out of range for 3"):
        store[3]


def test_packing_matches_utf8_lengths() -> None:
    data, offsets = pack_utf8(["é", "ab"])
    assert offsets.tolist() == [0, 2, 4] and bytes(data) == "éab".encode()


@pytest.mark.parametrize(
    "arrays",
    [
        {},
        {"text_bytes": np.zeros(3, np.uint8), "text_offsets": np.array([0, 1, 4])},
        {"text_bytes": np.zeros(3, np.uint8), "text_offsets": np.array([0, 2, 1, 3])},
        {"text_bytes": np.zeros(3, np.int8), "text_offsets": np.array([0, 1, 3])},
    ],
)
def test_bad_arrays_are_refused(arrays: dict[str, np.ndarray]) -> None:
    with pytest.raises(ValueError, match="do not hold 2 strings"):
        PackedStrings.from_arrays(arrays, 2, "text")
