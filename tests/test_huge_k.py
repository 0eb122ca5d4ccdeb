"""A huge ``k`` (issue 24, defect 4): every leg, the live snapshot, ``HybridIndex.search`` (with
fusion, reranking and MMR) and ``ParentDocumentIndex.search`` answer ``k = 10**9`` on a small
index with the hits of ``k = n`` (the width rule: ``min(k, n)`` columns), and in a fresh
process under an address-space limit a few hundred MB above its baseline, so their memory is
bounded by the documents, not by ``k``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dense_oracle import HashingEncoder, knn
from sparse_oracle import HashingSparseEncoder

from hybrid_engine import BM25Index, DenseIndex, HybridIndex, ParentDocumentIndex, SpladeIndex
from hybrid_engine.chunking import Chunker
from hybrid_engine.result import SearchResult

HUGE = 10**9
WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()
CORPUS = [
    {
        "_id": f"d{i}",
        "title": WORDS[i % 15],
        "text": " ".join(WORDS[(i * 7 + j) % 15] for j in range(5)),
        "metadata": {"group": i % 3},
    }
    for i in range(30)
]
QUERIES = ["cat on the mat", "river stone", "snow and wind fire", "moon", ""]
REPO = Path(__file__).resolve().parents[1]


class OverlapReranker:
    """A cross-encoder stand-in: query words in the passage, minus a length penalty."""

    name = "overlap"
    training = None

    def score(self, queries: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        return np.array(
            [
                len(set(q.split()) & set(p.split())) - 0.01 * len(p)
                for q, p in zip(queries, passages, strict=True)
            ],
            np.float32,
        )


def assert_same(got: SearchResult, want: SearchResult, width: int) -> None:
    assert got.ids.shape == got.scores.shape == (len(want), width)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)


def test_bm25_huge_k_is_every_document() -> None:
    index = BM25Index.build(CORPUS)
    n = len(CORPUS)
    assert_same(index.search(QUERIES, HUGE), index.search(QUERIES, n), n)
    allowed = np.arange(n) % 2 == 0
    got = index.search(QUERIES, HUGE, allowed=allowed)
    assert_same(got, index.search(QUERIES, n, allowed=allowed), n)
    assert allowed[got.ids[got.ids >= 0]].all()
    weighted = [{"cat": 1.0, "mat": 0.5}]
    assert_same(index.search_weighted(weighted, HUGE), index.search_weighted(weighted, n), n)


@pytest.mark.parametrize("graph", [False, True], ids=["exact", "hnsw"])
def test_dense_huge_k_is_the_brute_force_ranking(graph: bool) -> None:
    encoder = HashingEncoder()
    index = DenseIndex.build(CORPUS, encoder=encoder, exact_threshold=0 if graph else 1000)
    assert index.uses_graph == graph
    n = len(CORPUS)
    vectors = encoder.encode(QUERIES[:4])
    ids, scores = knn(index.vectors, vectors, n, index.metric)
    got = index.search(vectors, HUGE)
    assert got.ids.shape == (4, n)
    np.testing.assert_array_equal(got.ids, ids)
    np.testing.assert_allclose(got.scores, scores, rtol=1e-6)
    assert_same(index.search(QUERIES, HUGE), index.search(QUERIES, n), n)
    allowed = np.arange(n) < 7
    assert_same(
        index.search(vectors, HUGE, allowed=allowed), index.search(vectors, n, allowed=allowed), n
    )


def test_splade_huge_k() -> None:
    index = SpladeIndex.build(CORPUS, encoder=HashingSparseEncoder())
    n = len(CORPUS)
    assert_same(index.search(QUERIES, HUGE), index.search(QUERIES, n), n)


def live_engine() -> HybridIndex:
    """Three segments, deletions in two: 26 live documents at 34 positions."""
    engine = HybridIndex.build(
        CORPUS[:20],
        retrievers=("bm25", "dense", "splade"),
        encoder=HashingEncoder(),
        splade_encoder=HashingSparseEncoder(),
    )
    engine.add(CORPUS[20:26])
    engine.commit()
    engine.delete(["d3", "d21"])
    engine.add(CORPUS[26:])
    engine.commit()
    engine.delete(["d0", "d27"])
    engine.commit()
    assert engine.num_segments == 3 and len(engine) == 26
    return engine


@pytest.fixture(scope="module")
def engine() -> HybridIndex:
    return live_engine()


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"fusion": "rrf", "depth": HUGE},
        {"rerank": HUGE},
        {"mmr": 0.5, "mmr_candidates": HUGE},
        {"filter": {"group": 1}},
    ],
    ids=["fusion", "depth", "rerank", "mmr", "filter"],
)
def test_hybrid_huge_k_equals_k_n(engine: HybridIndex, options: dict[str, Any]) -> None:
    n = len(engine)
    reranking = engine.with_reranker(OverlapReranker())  # type: ignore[arg-type]
    small = {key: n if value == HUGE else value for key, value in options.items()}
    got = reranking.search(QUERIES, HUGE, **options)
    assert_same(got, reranking.search(QUERIES, n, **small), n)
    assert got.doc_ids[-1] == []  # the blank query
    if "filter" in options:  # padded where fewer documents match
        assert (got.ids >= 0).sum(axis=1).max() <= sum(1 for i in range(30) if i % 3 == 1)


def test_an_empty_index_answers_no_columns() -> None:
    engine = HybridIndex.build(CORPUS[:3], retrievers=("bm25",))
    engine.delete(["d0", "d1", "d2"])
    engine.commit()
    result = engine.search(QUERIES, HUGE)
    assert result.ids.shape == (len(QUERIES), 0) and result.doc_ids == [[]] * len(QUERIES)


def test_parent_documents_huge_k(model_path: Path) -> None:
    from tokenizers import Tokenizer

    counter = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    chunker = Chunker(counter, max_tokens=8, overlap_tokens=2)
    docs = [{"_id": f"p{i}", "text": " ".join(WORDS[i:] + WORDS[:i])} for i in range(6)]
    index = ParentDocumentIndex.build(docs, chunker=chunker, retrievers=("bm25",))
    want = index.search(QUERIES, len(docs))
    got = index.search(QUERIES, HUGE)
    assert got.documents == want.documents
    chunks = index.search(QUERIES, HUGE, unit="chunks")
    assert chunks.chunks == index.search(QUERIES, 10_000, unit="chunks").chunks


# -- memory ------------------------------------------------------------------------------------

_MEMORY_SCRIPT = """
import resource, sys
import numpy as np
sys.path.insert(0, {tests!r})
from dense_oracle import HashingEncoder
from sparse_oracle import HashingSparseEncoder
from hybrid_engine import BM25Index, DenseIndex, HybridIndex, SpladeIndex

corpus = [{{"_id": f"d{{i}}", "text": f"cat dog fish {{i}}"}} for i in range(40)]
queries = ["cat", "dog fish", "3"]
engine = HybridIndex.build(
    corpus, retrievers=("bm25", "dense", "splade"), encoder=HashingEncoder(),
    splade_encoder=HashingSparseEncoder(),
)
engine = engine.with_reranker(RERANKER)
bm25 = BM25Index.build(corpus)
dense = DenseIndex.build(corpus, encoder=HashingEncoder(), exact_threshold=0)
splade = SpladeIndex.build(corpus, encoder=HashingSparseEncoder())
calls = {{
    "bm25": lambda k: bm25.search(queries, k),
    "dense": lambda k: dense.search(queries, k),
    "splade": lambda k: splade.search(queries, k),
    "hybrid": lambda k: engine.search(queries, k, rerank=k),
    "mmr": lambda k: engine.search(queries, k, mmr=0.5, mmr_candidates=k),
}}
for call in calls.values():  # warm up: numba compiles, threads and arenas start
    call(len(corpus))
with open("/proc/self/status") as status:
    size = next(int(line.split()[1]) for line in status if line.startswith("VmSize:")) * 1024
limit = size + 384 * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
for name, call in calls.items():
    try:
        result = call({huge})
    except MemoryError:
        print(name, "MemoryError")
    else:
        print(name, result.ids.shape[1])
"""

_RERANKER = """
class Reranker:
    name, training = "overlap", None
    def score(self, queries, passages):
        return np.array([len(set(q.split()) & set(p.split())) for q, p in zip(queries, passages)],
                        np.float32)
RERANKER = Reranker()
"""


def _run_python(*args: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in a fresh process with this checkout's package, one thread and two
    malloc arenas (so the address-space limit measures the search, not thread stacks);
    asserts it succeeded."""
    env = {"PYTHONPATH": str(REPO), "MALLOC_ARENA_MAX": "2", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env={**env, "PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def test_huge_k_memory_is_bounded_by_the_documents() -> None:
    """Under an address-space limit 384 MB above the warmed-up process, ``k = 10**9`` (8 GB
    of ids alone, were a result ``k`` wide) answers with every document (40 columns)."""
    script = _MEMORY_SCRIPT.format(tests=str(REPO / "tests"), huge=HUGE)
    head, tail = script.split("engine = engine.with_reranker", 1)
    script = head + textwrap.dedent(_RERANKER) + "engine = engine.with_reranker" + tail
    done = _run_python("-c", script)
    lines = dict(line.split() for line in done.stdout.splitlines())
    assert lines == dict.fromkeys(("bm25", "dense", "splade", "hybrid", "mmr"), "40"), done.stdout


_CLI_SCRIPT = """
import resource, sys
from hybrid_engine.cli import main

with open("/proc/self/status") as status:
    size = next(int(line.split()[1]) for line in status if line.startswith("VmSize:")) * 1024
limit = size + 1024 * 2**20
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
sys.exit(main(["search", sys.argv[1], "cat", "-k", "1000000000", "--json"]))
"""


def test_the_cli_searches_a_huge_k(tmp_path: Path) -> None:
    """``hybrid-engine search IDX q -k 1000000000`` under an address-space limit 1 GB above
    the process's start answers every matching document."""
    corpus = [{"_id": f"d{i}", "text": f"cat dog {i}" if i % 2 else f"fish {i}"} for i in range(30)]
    HybridIndex.build(corpus, retrievers=("bm25",)).save(tmp_path / "idx")
    done = _run_python("-c", _CLI_SCRIPT, str(tmp_path / "idx"))
    hits = json.loads(done.stdout)["hits"]
    assert sorted(hit["id"] for hit in hits) == sorted(f"d{i}" for i in range(30) if i % 2)
