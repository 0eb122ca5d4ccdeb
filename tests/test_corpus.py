"""DocIds.append: ids of added documents follow the corpus's mode and stay unique."""

from __future__ import annotations

import numpy as np
import pytest

from hybrid_engine.corpus import DocIds


def test_append_explicit_ids() -> None:
    ids = DocIds.from_list(["a", "bé"]).append(["c", "日本"]).append(["e"])
    assert ids.explicit and len(ids) == 5 and ids[:] == ["a", "bé", "c", "日本", "e"]
    whole = DocIds.from_list(["a", "bé", "c", "日本", "e"]).arrays()
    for name, array in ids.arrays().items():
        np.testing.assert_array_equal(array, whole[name])


def test_append_positions() -> None:
    ids = DocIds.from_list([None, None]).append([None] * 3)
    assert not ids.explicit and len(ids) == 5 and ids[4] == "4"


def test_append_nothing_returns_the_same_ids() -> None:
    ids = DocIds.from_list(["a"])
    assert ids.append([]) is ids


@pytest.mark.parametrize(
    "first, new, message",
    [
        (["a", "b"], ["c", "a"], "duplicate document '_id' 'a': the index already holds it"),
        (["a"], ["c", "c"], "duplicate document '_id' 'c'; ids must be unique"),
        (["a"], [None], "give every new document an '_id' too"),
        (["a"], ["b", None], "document 1 has no '_id' while others do"),
        ([None], ["b"], r"no '_id' \(their ids are positions\)"),
    ],
)
def test_append_refuses(first, new, message) -> None:
    ids = DocIds.from_list(first)
    with pytest.raises(ValueError, match=message):
        ids.append(new)
    assert len(ids) == len(first)
