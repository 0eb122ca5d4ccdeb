"""Property tests of the BM25 query path on arbitrary queries (the atheris harness
``tests/fuzz/bm25_query.py`` checks the same contract, coverage-guided): every batch of str
equals the plain-numpy oracle over the index's own tokens, for every BM25 variant and several
analyzer settings, with and without an ``allowed`` mask; bad batches are a TypeError."""

from __future__ import annotations

import numpy as np
import pytest
from bm25_checks import compare_with_oracle
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("atheris", reason="the fuzz extra: pip install -e .[fuzz]")

from tests.fuzz._corpus import WORDS
from tests.fuzz.bm25_query import SETTINGS, indexes, one_input

texts = st.lists(
    st.lists(
        st.sampled_from(WORDS) | st.text(st.characters(exclude_categories=["Cs"]), max_size=8),
        max_size=6,
    ).map(" ".join),
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(range(len(SETTINGS))), texts, st.integers(1, 60), st.booleans(), st.data())
def test_any_batch_equals_the_oracle(
    which: int, batch: list[str], k: int, masked: bool, data: st.DataObject
) -> None:
    index, oracle, analyzer = indexes()[which]
    allowed = None
    if masked:
        allowed = np.array(
            data.draw(
                st.lists(st.booleans(), min_size=index.num_documents, max_size=index.num_documents)
            ),
            dtype=bool,
        )
    result = index.search(batch, k, allowed=allowed)
    compare_with_oracle(result, oracle, [analyzer.analyze(q) for q in batch], k, allowed)


@pytest.mark.parametrize(
    "batch", [[None], ["a", 3], [b"bytes"], b"bytes", 3, np.array([["a"]]), np.array([1, 2])]
)
def test_a_batch_that_is_not_text_is_a_type_error(batch: object) -> None:
    index = indexes()[0][0]
    with pytest.raises(TypeError):
        index.search(batch, 3)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=600))
def test_the_fuzz_harness_on_random_bytes(data: bytes) -> None:
    one_input(data)
