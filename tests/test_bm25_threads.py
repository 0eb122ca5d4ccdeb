"""Threads change nothing: concurrent searches, parallel batches and parallel builds give
exactly the sequential results and arrays; the scratch memory kept for searches is bounded
however many threads searched."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from hybrid_engine import BM25Index
from hybrid_engine._threads import default_threads
from hybrid_engine.lexical.scratch import ScratchPool


def corpus(n_docs: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    words = np.array([f"term{i}" for i in range(3000)] + ["the", "running", "runs", "ran"])
    p = 1.0 / np.arange(1, len(words) + 1) ** 1.1
    p /= p.sum()
    return [" ".join(rng.choice(words, rng.integers(1, 40), p=p)) for _ in range(n_docs)]


CORPUS = corpus(6000, seed=0)  # 6000 docs: several 1024-document shards per batch
rng = np.random.default_rng(1)
QUERIES = [
    " ".join(f"term{t}" for t in rng.zipf(1.3, rng.integers(1, 8)) % 3000) for _ in range(400)
]


@pytest.fixture(scope="module", params=[True, False], ids=["impacts", "postings"])
def index(request) -> BM25Index:
    return BM25Index.build(CORPUS, cache_impacts=request.param)


def test_concurrent_searches_equal_sequential(index: BM25Index) -> None:
    tasks = [
        (QUERIES[i : i + n], k)
        for i, n, k in zip(
            range(0, 400, 20), [1, 3, 20, 7, 50, 2, 13, 40] * 3, [1, 5, 10, 32, 33, 100, 1000] * 3
        )
    ]
    expected = [index.search(q, k, num_threads=1) for q, k in tasks]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(3):
            got = list(pool.map(lambda task: index.search(*task), tasks))
            for e, g in zip(expected, got):
                np.testing.assert_array_equal(g.ids, e.ids)
                np.testing.assert_array_equal(g.scores, e.scores)


def test_32_threads_at_once_keep_at_most_the_pool_bound(index: BM25Index) -> None:
    tasks = [(QUERIES[i * 12 : (i + 1) * 12], [1, 10, 100, 1000][i % 4]) for i in range(32)]
    expected = [index.search(q, k, num_threads=1) for q, k in tasks]
    start = threading.Barrier(len(tasks))

    def search(task: tuple[list[str], int]):  # type: ignore[no-untyped-def]
        start.wait()  # all 32 searches in flight together, each borrowing a scratch set
        return index.search(*task, num_threads=1)

    with ThreadPoolExecutor(max_workers=len(tasks)) as pool:
        got = list(pool.map(search, tasks))
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g.ids, e.ids)
        np.testing.assert_array_equal(g.scores, e.scores)
    free = index._searcher._scratch._free
    assert 1 <= len(free) <= default_threads()
    for acc, _, _ in free:  # what is kept for reuse is clean
        assert not acc.any()


def test_scratch_pool_keeps_at_most_its_bound() -> None:
    pool = ScratchPool(10, max_kept=2)
    with pool.borrowed() as a, pool.borrowed() as b, pool.borrowed() as c:
        assert len({id(a), id(b), id(c)}) == 3
        assert a[0].shape == (10,) and a[1].shape == a[2].shape == (11,)
        assert (a[0].dtype, a[1].dtype, a[2].dtype) == (np.float64, np.int32, np.float32)
    assert len(pool._free) == 2
    with pool.borrowed() as again:
        assert any(again is kept for kept in (a, b, c))
    with pytest.raises(RuntimeError), pool.borrowed() as dirty:
        dirty[0][3] = 1.0
        raise RuntimeError("a kernel interrupted mid-query")
    assert all(kept is not dirty for kept in pool._free) and len(pool._free) == 1


@pytest.mark.parametrize("k", [10, 100])
@pytest.mark.parametrize("threads", [2, 3, None])
def test_parallel_batch_equals_single_thread(index: BM25Index, k: int, threads) -> None:
    one = index.search(QUERIES, k, num_threads=1)
    many = index.search(QUERIES, k, num_threads=threads)
    np.testing.assert_array_equal(many.ids, one.ids)
    np.testing.assert_array_equal(many.scores, one.scores)


def test_more_threads_than_queries(index: BM25Index) -> None:
    one = index.search(QUERIES[:3], 10, num_threads=1)
    many = index.search(QUERIES[:3], 10, num_threads=16)
    np.testing.assert_array_equal(many.ids, one.ids)


@pytest.mark.parametrize("batch_size", [16384, 2500])
def test_build_is_independent_of_threads(batch_size: int, tmp_path) -> None:
    a = BM25Index.build(CORPUS, num_threads=1, batch_size=batch_size)
    b = BM25Index.build(CORPUS, num_threads=2, batch_size=batch_size)
    c = BM25Index.build(CORPUS, num_threads=5, batch_size=batch_size)
    assert a._arrays.keys() == b._arrays.keys() == c._arrays.keys()
    for name in a._arrays:
        np.testing.assert_array_equal(b._arrays[name], a._arrays[name], err_msg=name)
        np.testing.assert_array_equal(c._arrays[name], a._arrays[name], err_msg=name)
    # term ids follow the first occurrence in document order
    first_terms = [t for t in CORPUS[0].split() if t != "the"]
    assert a.term_id(first_terms[0]) == 0
    a.save(tmp_path / "a")
    b.save(tmp_path / "b")
    for file in (tmp_path / "a").glob("*.npy"):
        assert file.read_bytes() == (tmp_path / "b" / file.name).read_bytes(), file.name


def test_build_batches_do_not_change_the_index() -> None:
    a = BM25Index.build(CORPUS, batch_size=16384)
    b = BM25Index.build(iter(CORPUS), batch_size=777)
    for name in a._arrays:
        np.testing.assert_array_equal(b._arrays[name], a._arrays[name], err_msg=name)
