"""Concurrent search: does ``BM25Index.search`` release the GIL?

The same queries are searched by one Python thread (one call with all of them) and by two Python
threads at once (one call each with half of them), ``num_threads=1`` per call. On 2 free cores
a search that releases the GIL runs the two halves in parallel: ``1_thread_over_2_threads``
(median time of the single thread / median time of the pair) approaches 2; a GIL-bound search
stays near 1.

The machine is shared, so the attainable speed-up varies from run to run: the ``control`` groups
measure it in the same run with a numba ``nogil`` loop that does nothing but arithmetic. Read the
search speed-up against the control's.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import pytest
from bench_common import record_ratio

K = 10


@pytest.fixture(scope="module")
def pool():
    # Threads made once, outside the timing (and each keeps its search scratch buffers).
    with ThreadPoolExecutor(max_workers=2) as executor:
        yield executor


def _halves(queries):
    half = len(queries) // 2
    return queries[:half], queries[half:]


def _bench(benchmark, group, side, fn, rounds):
    benchmark.group = group
    benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=1)
    record_ratio(benchmark, group, side, reference="2_threads")


def _one_thread(pool, work, *args):
    return lambda: pool.submit(work, *args).result()


def _two_threads(pool, work, args_a, args_b):
    def run():
        a, b = pool.submit(work, *args_a), pool.submit(work, *args_b)
        return a.result(), b.result()

    return run


def _search_cases(benchmark, side, index, queries, group, rounds, pool):
    search = lambda qs: index.search(qs, k=K, num_threads=1)  # noqa: E731
    first, second = _halves(queries)
    if side == "1_thread":
        fn = _one_thread(pool, search, queries)
    else:
        fn = _two_threads(pool, search, (first,), (second,))
    _bench(benchmark, group, side, fn, rounds)


SIDES = ["1_thread", "2_threads"]


@pytest.mark.parametrize("side", SIDES)
def test_threads_scifact(benchmark, side, scifact_engines, scifact_queries, pool):
    _search_cases(
        benchmark, side, scifact_engines[0], scifact_queries, "threads-scifact-1109q-k10", 7, pool
    )


@pytest.mark.scale
@pytest.mark.parametrize("side", SIDES)
def test_threads_scale_msmarco(benchmark, side, scale_engines, msmarco_queries, pool):
    _search_cases(
        benchmark,
        side,
        scale_engines[0],
        msmarco_queries,
        "threads-scale-msmarco-6980q-k10",
        9,
        pool,
    )


@numba.njit(nogil=True, cache=True)
def _spin(n):
    total = 0.0
    for i in range(n):
        total += np.sqrt(i)
    return total


CONTROL_STEPS = 50_000_000  # ~0.1 s per call


@pytest.mark.parametrize("side", SIDES)
def test_threads_control(benchmark, side, pool):
    """The attainable 2-thread speed-up right now, from a loop that certainly releases the GIL."""
    if side == "1_thread":
        fn = _one_thread(pool, lambda: (_spin(CONTROL_STEPS), _spin(CONTROL_STEPS)))
    else:
        fn = _two_threads(pool, _spin, (CONTROL_STEPS,), (CONTROL_STEPS,))
    _bench(benchmark, "threads-control-numba-nogil", side, fn, 7)
