"""Coverage-guided (atheris) fuzz harnesses, one module per target.

Each runs as ``python -m tests.fuzz.<name> [libFuzzer flags]`` from the repository root, e.g.
``python -m tests.fuzz.analyzer -max_total_time=60``; ``scripts/fuzz.py`` runs several and
prints a table of what they tried. Every module has a ``one_input(data: bytes)`` that raises
``Unexpected`` (or any exception not in ``EXPECTED``) for a finding; the pytest files
``tests/test_fuzz_*.py`` feed the same functions hypothesis-drawn bytes.
"""

import sys
from pathlib import Path

HARNESSES = (
    "analyzer",
    "bm25_query",
    "splade_search",
    "dense_search",
    "filters",
    "schemas",
    "load_bm25",
    "load_dense",
    "load_splade",
    "load_live",
)
"""The harness modules, one per target."""

# The oracles beside the tests (bm25_oracle, sparse_oracle, ...) import as top-level modules,
# as they do under pytest.
_TESTS = str(Path(__file__).resolve().parents[1])
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)
