"""Every index loader on hostile directories (the atheris harnesses ``tests/fuzz/load_*.py``
make the same edits, coverage-guided): random structural edits of a saved BM25, dense, SPLADE
and live hybrid index, checksums recomputed, are refused with an IndexFormatError naming the
directory, or load into an index that searches into well-formed rows."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("atheris", reason="the fuzz extra: pip install -e .[fuzz]")

from tests.fuzz import load_bm25, load_dense, load_live, load_splade

HARNESSES: dict[str, Callable[[bytes], None]] = {
    "bm25": load_bm25.one_input,
    "dense": load_dense.one_input,
    "splade": load_splade.one_input,
    "live": load_live.one_input,
}


@pytest.mark.parametrize("name", HARNESSES)
def test_hostile_directories_are_refused_or_load_sound(name: str) -> None:
    harness = HARNESSES[name]

    @settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.binary(min_size=8, max_size=200))
    def run(data: bytes) -> None:
        harness(data)

    run()
