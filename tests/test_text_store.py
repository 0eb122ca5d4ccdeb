"""TextStore: packed document texts round-trip, including odd Unicode, and bad arrays fail."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hybrid_engine.text_store import TextStore, pack_utf8


@given(st.lists(st.text()))
def test_every_text_round_trips(texts: list[str]) -> None:
    store = TextStore.from_texts(texts)
    assert len(store) == len(texts)
    assert list(store) == texts
    again = TextStore.from_arrays(store.arrays(), len(texts))
    assert again[:] == texts


def test_lone_surrogates_and_negative_positions() -> None:
    store = TextStore.from_texts(["a\ud800b", "", "zürich"])
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
    with pytest.raises(ValueError, match="do not hold 2 texts"):
        TextStore.from_arrays(arrays, 2)
