"""``HybridResult.doc_ids`` and ``hits()`` (issue 24, defect 6): read once per result, gathered
per segment from the packed ids (``PackedStrings.take``), equal to the per-hit reference
(``Snapshot.doc_id`` / ``Snapshot.hit`` of each position) on a multi-segment index with
deletions and padding."""

from __future__ import annotations

import numpy as np
import pytest
from dense_oracle import HashingEncoder
from hypothesis import given
from hypothesis import strategies as st

from hybrid_engine import HybridIndex, packed
from hybrid_engine.packed import PackedStrings
from hybrid_engine.pipeline.result import HybridResult

WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()


def document(i: int) -> dict[str, object]:
    title = "" if i % 4 == 0 else WORDS[i % 15]
    return {
        "_id": f"doc-{i}-é" if i % 5 else str(i),  # non-ASCII ids and numeric-looking ones
        "title": title,
        "text": " ".join(WORDS[(i * 7 + j) % 15] for j in range(4)),
        "metadata": {"group": i % 3, "tags": ["a", "b"][: i % 3]},
    }


def engine() -> HybridIndex:
    """Three segments, deletions in the first two."""
    index = HybridIndex.build(
        [document(i) for i in range(20)], retrievers=("bm25", "dense"), encoder=HashingEncoder()
    )
    index.add([document(i) for i in range(20, 32)])
    index.commit()
    index.delete([document(i)["_id"] for i in (1, 7, 22)])  # type: ignore[misc]
    index.add([document(i) for i in range(32, 40)])
    index.commit()
    assert index.num_segments == 3
    return index


def reference(result: HybridResult) -> tuple[list[list[str]], list[list[object]]]:
    """Ids and hits read one position at a time."""
    snapshot = result.snapshot
    assert snapshot is not None
    ids, hits = [], []
    for row, scores in zip(result.ids, result.scores, strict=True):
        ids.append([snapshot.doc_id(int(i)) for i in row if i != -1])
        hits.append(
            [snapshot.hit(int(i), float(s)) for i, s in zip(row, scores, strict=True) if i != -1]
        )
    return ids, hits


def test_ids_and_hits_equal_the_per_hit_reference() -> None:
    index = engine()
    queries = ["cat mat", "river stone snow", "", "moon"]
    for options in ({}, {"filter": {"group": 1}}):
        result = index.search(queries, 25, **options)
        assert (result.ids == -1).any()  # padding: the blank query, the filter
        assert len(np.unique(index._state.snapshot.locate(result.ids[result.ids >= 0])[0])) == 3
        ids, hits = reference(result)
        assert result.doc_ids == ids
        assert result.hits() == hits
        assert result.doc_ids[2] == [] and result.hits()[2] == []


def test_ids_and_hits_are_read_once() -> None:
    result = engine().search(["cat mat", "moon"], 10)
    assert result.doc_ids is result.doc_ids
    first, second = result.hits(), result.hits()
    assert first == second and first is not second  # new lists of the same hits
    assert all(a is b for a, b in zip(first[0], second[0], strict=True))


def test_an_empty_batch() -> None:
    result = engine().search([], 10)
    assert result.doc_ids == [] and result.hits() == []


@given(
    st.lists(st.text(), min_size=1),
    st.data(),
    st.sampled_from([(3, 10**9), (packed.TAKE_BYTES, 10**9), (packed.TAKE_BYTES, 0)]),
)
def test_take_equals_one_at_a_time(
    texts: list[str], data: st.DataObject, limits: tuple[int, int]
) -> None:
    """Odd Unicode and NULs included; gathered whole, a few bytes at a time, or one by one."""
    store = PackedStrings.from_strings(texts)
    positions = data.draw(st.lists(st.integers(0, len(texts) - 1), max_size=30))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(packed, "TAKE_BYTES", limits[0])
        patch.setattr(packed, "LONG_STRING", limits[1])
        got = store.take(np.array(positions, dtype=np.int64))
    assert got == [texts[i] for i in positions]
