"""Property tests of the SPLADE and dense indexes' search on arbitrary query arrays (the atheris
harnesses ``tests/fuzz/splade_search.py`` and ``dense_search.py`` check the same contract,
coverage-guided): any array of any dtype and shape is refused with a ValueError or TypeError,
or searched into well-formed rows; the fuzz harnesses on random bytes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from hybrid_engine import SparseVectors

pytest.importorskip("atheris", reason="the fuzz extra: pip install -e .[fuzz]")

from tests.fuzz import dense_search, splade_search
from tests.fuzz._harness import EXPECTED
from tests.fuzz.splade_search import check_rows

dtypes = st.sampled_from(
    [np.float32, np.float64, np.float16, np.int64, np.int32, np.uint8, np.bool_, np.complex64]
)
arrays = hnp.arrays(dtypes, hnp.array_shapes(min_dims=0, max_dims=3, max_side=9))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 3), arrays, st.integers(1, 60), st.booleans())
def test_dense_query_arrays(which: int, queries: np.ndarray, k: int, exact: bool) -> None:
    index = dense_search.indexes()[which]
    try:
        result = index.search(queries, k, exact=exact)
    except EXPECTED:
        return
    assert queries.dtype.kind in "fiub" and queries.shape[-1] == dense_search.DIM
    check_rows(result.ids, result.scores, index.num_documents)


@settings(max_examples=200, deadline=None)
@given(arrays, arrays, arrays, st.integers(1, 60))
def test_splade_query_vectors(
    offsets: np.ndarray, terms: np.ndarray, weights: np.ndarray, k: int
) -> None:
    index, _ = splade_search.index()
    try:
        result = index.search(SparseVectors(offsets, terms, weights), k)
    except EXPECTED:
        return
    assert (offsets.dtype, terms.dtype, weights.dtype) == (np.int64, np.int32, np.float32)
    check_rows(result.ids, result.scores, index.num_documents)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=600))
def test_the_splade_harness_on_random_bytes(data: bytes) -> None:
    splade_search.one_input(data)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=600))
def test_the_dense_harness_on_random_bytes(data: bytes) -> None:
    dense_search.one_input(data)
