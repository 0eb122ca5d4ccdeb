"""The numba kernels run as plain Python (NUMBA_DISABLE_JIT=1) in a subprocess: the results,
unmasked and masked, and the live document frequencies equal the numpy oracle and, exactly,
the compiled kernels' results."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from bm25_checks import compare_with_oracle, oracle_for

from hybrid_engine import BM25Index

TESTS = Path(__file__).resolve().parent

SCRIPT = r"""
import sys
import numba
import numpy as np
from numba.core import config
assert config.DISABLE_JIT, "NUMBA_DISABLE_JIT did not take effect"
from bm25_checks import compare_with_oracle, oracle_for
from test_bm25_nojit import ALLOWED, CASES, CORPUS, QUERIES
from hybrid_engine import BM25Index
from hybrid_engine.lexical import _kernels as _bm25_kernels
assert not isinstance(_bm25_kernels.search_batch, numba.core.registry.CPUDispatcher)
out = {}
for i, (method, cache, k) in enumerate(CASES):
    index = BM25Index.build(CORPUS, method=method, cache_impacts=cache, k1=1.2, b=0.75)
    oracle, analyzer = oracle_for(index, CORPUS)
    result = index.search(QUERIES, k)
    compare_with_oracle(result, oracle, [analyzer.analyze(q) for q in QUERIES], k)
    out[f"ids{i}"], out[f"scores{i}"] = result.ids, result.scores
    masked = index.search(QUERIES, k, allowed=ALLOWED)
    compare_with_oracle(masked, oracle, [analyzer.analyze(q) for q in QUERIES], k, ALLOWED)
    out[f"masked_ids{i}"], out[f"masked_scores{i}"] = masked.ids, masked.scores
    out[f"live_dfs{i}"] = index.live_doc_freqs(ALLOWED)
np.savez(sys.argv[1], **out)
"""

_rng = np.random.default_rng(0)
_WORDS = np.array(["alpha", "beta", "gamma", "delta", "the", "eps", "zeta", "eta", "theta"])
CORPUS = [" ".join(_rng.choice(_WORDS, _rng.integers(0, 9))) for _ in range(120)]
QUERIES = ["alpha", "zeta eta eta", "theta beta alpha gamma", "the", "eps unknown", "delta delta"]
CASES = [
    (method, cache, k)
    for method in ("lucene", "robertson", "atire", "bm25l", "bm25+")
    for cache, k in ((True, 5), (False, 40))
] + [("lucene", True, 1), ("lucene", False, 33)]
ALLOWED = _rng.random(len(CORPUS)) < 0.5


def test_kernels_without_jit_equal_oracle_and_jit(tmp_path) -> None:
    out = tmp_path / "nojit.npz"
    env = {
        **os.environ,
        "NUMBA_DISABLE_JIT": "1",
        "PYTHONPATH": os.pathsep.join([str(TESTS.parent), str(TESTS)]),
    }
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    nojit = np.load(out)
    for i, (method, cache, k) in enumerate(CASES):
        index = BM25Index.build(CORPUS, method=method, cache_impacts=cache, k1=1.2, b=0.75)
        result = index.search(QUERIES, k)
        oracle, analyzer = oracle_for(index, CORPUS)
        compare_with_oracle(result, oracle, [analyzer.analyze(q) for q in QUERIES], k)
        np.testing.assert_array_equal(nojit[f"ids{i}"], result.ids, err_msg=str(CASES[i]))
        np.testing.assert_array_equal(nojit[f"scores{i}"], result.scores, err_msg=str(CASES[i]))
        masked = index.search(QUERIES, k, allowed=ALLOWED)
        np.testing.assert_array_equal(nojit[f"masked_ids{i}"], masked.ids, err_msg=str(CASES[i]))
        np.testing.assert_array_equal(
            nojit[f"masked_scores{i}"], masked.scores, err_msg=str(CASES[i])
        )
        np.testing.assert_array_equal(nojit[f"live_dfs{i}"], index.live_doc_freqs(ALLOWED))
