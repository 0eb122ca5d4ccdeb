"""A SPLADE index loaded with ``mmap=True`` (no ``verify``) serves its uint8 impacts in place and
checks each posting list when a query first reads it: scores bit-identical to a plain-numpy
oracle of the SPLADE score, corrupt posting lists (checksums recomputed) refused at the first
query touching them or at a verified load, untouched terms served as before."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from index_dirs import copy_index, rewrite
from sparse_oracle import HashingSparseEncoder, top_k

from hybrid_engine import IndexFormatError, SparseVectors, SpladeIndex

VOCAB = 200
N_DOCS = 3000
ENCODER = HashingSparseEncoder(VOCAB)


def random_vectors(rng: np.random.Generator, n_rows: int, per_row: int) -> SparseVectors:
    """``n_rows`` rows of ``per_row`` distinct terms each, in random order, positive
    float32 weights of varied size."""
    terms = np.concatenate([rng.choice(VOCAB, per_row, replace=False) for _ in range(n_rows)])
    weights = rng.gamma(2.0, 0.7, n_rows * per_row).astype(np.float32) + np.float32(0.01)
    offsets = np.arange(0, n_rows * per_row + 1, per_row, dtype=np.int64)
    return SparseVectors(offsets, terms.astype(np.int32), weights)


@pytest.fixture(scope="module")
def built() -> SpladeIndex:
    rng = np.random.default_rng(7)
    rows = random_vectors(rng, N_DOCS, 20)
    return SpladeIndex.from_vectors(rows, encoder=ENCODER, ids=[f"d{i}" for i in range(N_DOCS)])


@pytest.fixture(scope="module")
def saved(built: SpladeIndex, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("splade") / "index"
    built.save(path)
    return path


def oracle_scores(path: Path, queries: SparseVectors) -> np.ndarray:
    """float64 ``(n_queries, n_docs)``: the SPLADE score from the saved arrays by its
    definition, each query term's ``(q_w * scale) * impact`` added in query-term order."""
    offsets = np.load(path / "posting_offsets.npy")
    docs = np.load(path / "doc_ids.npy")
    impacts = np.load(path / "impacts.npy")
    scale = SpladeIndex.load(path, encoder=ENCODER).scale
    n = len(queries.offsets) - 1
    out = np.zeros((n, N_DOCS))
    for q in range(n):
        for j in range(queries.offsets[q], queries.offsets[q + 1]):
            term = queries.terms[j]
            span = slice(offsets[term], offsets[term + 1])
            weight = np.float64(queries.weights[j]) * scale
            out[q, docs[span]] += weight * impacts[span].astype(np.float64)
    return out


@pytest.mark.parametrize("k", [1, 10, 100])
@pytest.mark.parametrize("mode", ["built", "in memory", "mmap"])
def test_scores_are_bitwise_the_numpy_oracle(
    built: SpladeIndex, saved: Path, mode: str, k: int
) -> None:
    """1- to 30-term queries: below and above the postings from which a small k scores
    densely, so both kernel paths are compared."""
    rng = np.random.default_rng(k)
    queries = [random_vectors(rng, 4, n_terms) for n_terms in (1, 3, 30)]
    parts = SparseVectors(
        np.concatenate([[0], np.cumsum([np.diff(p.offsets) for p in queries])]).astype(np.int64),
        np.concatenate([p.terms for p in queries]),
        np.concatenate([p.weights for p in queries]),
    )
    index = {
        "built": built,
        "in memory": SpladeIndex.load(saved, encoder=ENCODER),
        "mmap": SpladeIndex.load(saved, encoder=ENCODER, mmap=True),
    }[mode]
    expected_ids, expected_scores = top_k(oracle_scores(saved, parts), k)
    result = index.search(parts, k)
    np.testing.assert_array_equal(result.ids, expected_ids)
    np.testing.assert_array_equal(result.scores, expected_scores)  # bit for bit


def test_a_mapped_load_reads_no_posting(saved: Path) -> None:
    index = SpladeIndex.load(saved, encoder=ENCODER, mmap=True)
    for name in ("posting_offsets", "doc_ids", "impacts"):
        assert isinstance(index._arrays[name], np.memmap), name
    # The kernels read the mapped uint8 impacts themselves: no copy of them exists.
    layout = index._searcher._layout
    assert layout[4] is index._arrays["doc_ids"] and layout[5] is index._arrays["impacts"]
    assert index._check is not None and not index._check._checked.any()  # no list checked
    query = SparseVectors(np.array([0, 2], np.int64), np.array([5, 17], np.int32),
                          np.ones(2, np.float32))  # fmt: skip
    index.search(query, 3)
    assert np.flatnonzero(index._check._checked).tolist() == [5, 17]  # only those read
    verified = SpladeIndex.load(saved, encoder=ENCODER, mmap=True, verify=True)
    assert verified._check is not None and verified._check._checked.all()


def one_term(term: int) -> SparseVectors:
    return SparseVectors(
        np.array([0, 1], np.int64), np.array([term], np.int32), np.ones(1, np.float32)
    )


CORRUPTIONS = ["doc id past the last document", "descending doc ids", "zero impact"]


def corrupt(path: Path, how: str, term: int) -> None:
    """Break one posting list of ``term``, the manifest's checksums made to agree."""
    offsets = np.load(path / "posting_offsets.npy")
    start, end = offsets[term], offsets[term + 1]
    assert end - start >= 2
    docs, impacts = np.load(path / "doc_ids.npy"), np.load(path / "impacts.npy")
    if how == "doc id past the last document":
        docs[end - 1] = N_DOCS
        rewrite(path, "doc_ids", docs)
    elif how == "descending doc ids":
        docs[start], docs[start + 1] = docs[start + 1], docs[start]
        rewrite(path, "doc_ids", docs)
    else:
        impacts[start + 1] = 0
        rewrite(path, "impacts", impacts)


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_a_corrupt_posting_list_is_refused_when_first_read(
    built: SpladeIndex, saved: Path, tmp_path: Path, how: str
) -> None:
    term, other = 11, 12
    copy = copy_index(saved, tmp_path / "copy")
    corrupt(copy, how, term)
    malformed = f"{copy}: the postings of term {term} are malformed; the index is corrupt, rebuild"
    for mmap in (False, True):  # a verified load reads every list
        with pytest.raises(IndexFormatError, match=malformed):
            SpladeIndex.load(copy, encoder=ENCODER, mmap=mmap, verify=True)
    with pytest.raises(IndexFormatError, match=malformed):  # the default without mmap
        SpladeIndex.load(copy, encoder=ENCODER)
    for index in (
        SpladeIndex.load(copy, encoder=ENCODER, mmap=True),  # the default: no verify
        SpladeIndex.load(copy, encoder=ENCODER, verify=False),
    ):
        for _ in range(2):  # a failed check is not remembered as a pass
            with pytest.raises(IndexFormatError, match=malformed):
                index.search(
                    SparseVectors(np.array([0, 1, 2], np.int64), np.array([other, term],
                                  np.int32), np.ones(2, np.float32)),
                )  # fmt: skip
        with pytest.raises(IndexFormatError, match=malformed):
            index.postings(term)
        with pytest.raises(IndexFormatError, match=malformed):
            index.document_vectors()
        for k in (3, 50):
            served, expected = index.search(one_term(other), k), built.search(one_term(other), k)
            np.testing.assert_array_equal(served.ids, expected.ids)
            np.testing.assert_array_equal(served.scores, expected.scores)
        np.testing.assert_array_equal(index.postings(other)[0], built.postings(other)[0])
