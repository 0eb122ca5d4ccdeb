"""SpladeIndex: scores equal a plain-numpy dot product of the dequantized impacts; padding,
threads, save/load, corruption, model checks, and the C++ inversion's edge cases."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from index_dirs import copy_index, rewrite
from sparse_oracle import HashingSparseEncoder, dense_rows, quantized_matrix, top_k

from hybrid_engine import IndexFormatError, SpladeIndex, _core

WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()
RNG = np.random.default_rng(0)
CORPUS = [
    {"_id": f"d{i}", "title": WORDS[i % 15], "text": " ".join(RNG.choice(WORDS, size=6))}
    for i in range(120)
]
QUERIES = ["cat on the mat", "river stone", "snow and wind fire fire", "moon", "unknown words"]


def texts(corpus: list[dict[str, str]]) -> list[str]:
    return [f"{d['title']} {d['text']}" for d in corpus]


@pytest.fixture(scope="module")
def index() -> SpladeIndex:
    return SpladeIndex.build(CORPUS, encoder=HashingSparseEncoder())


@pytest.mark.parametrize("k", [1, 5, 40, 200])
def test_scores_equal_the_numpy_oracle(index: SpladeIndex, k: int) -> None:
    encoder = HashingSparseEncoder()
    docs, scale = quantized_matrix(dense_rows(encoder.encode(texts(CORPUS)), 64))
    queries = dense_rows(encoder.encode(QUERIES), 64)
    expected_ids, expected_scores = top_k(queries @ docs.T, k)
    result = index.search(QUERIES, k)
    assert index.scale == pytest.approx(scale, rel=1e-12)
    np.testing.assert_array_equal(result.ids, expected_ids)
    np.testing.assert_allclose(result.scores, expected_scores, rtol=1e-6)
    assert result.ids.dtype == np.int64 and result.scores.dtype == np.float32


def test_quantization_error_is_bounded(index: SpladeIndex) -> None:
    """Each posting's impact is within scale / 2 of its weight, so a score is within
    ``sum(q_w) * scale / 2`` of the unquantized dot product."""
    encoder = HashingSparseEncoder()
    docs = dense_rows(encoder.encode(texts(CORPUS)), 64)
    queries = dense_rows(encoder.encode(QUERIES), 64)
    exact = queries @ docs.T
    result = index.search(QUERIES, 10)
    for q, (ids, scores) in enumerate(zip(result.ids, result.scores)):
        bound = queries[q].sum() * index.scale / 2 + 1e-5
        hits = ids >= 0
        assert np.all(np.abs(scores[hits] - exact[q, ids[hits]]) <= bound)


def test_single_query_and_padding(index: SpladeIndex) -> None:
    one = index.search("cat", 500)
    assert one.ids.shape == (1, min(500, index.num_documents))
    n_hits = int((one.ids[0] >= 0).sum())
    assert 0 < n_hits < 120
    assert np.all(one.scores[0, n_hits:] == -np.inf) and np.all(one.ids[0, n_hits:] == -1)
    with pytest.raises(ValueError, match="k must be"):
        index.search("cat", 0)
    blank = index.search(["cat", " "], 500)  # a blank query has no hits
    np.testing.assert_array_equal(blank.ids[0], one.ids[0])
    assert np.all(blank.ids[1] == -1)
    with pytest.raises(TypeError):
        index.search([3])  # type: ignore[list-item]


def test_threads_and_concurrent_searches_equal_sequential(index: SpladeIndex) -> None:
    queries = [f"{a} {b}" for a in WORDS for b in WORDS[:6]]
    sequential = index.search(queries, 10, num_threads=1)
    split = index.search(queries, 10, num_threads=3)
    np.testing.assert_array_equal(split.ids, sequential.ids)
    np.testing.assert_array_equal(split.scores, sequential.scores)
    with ThreadPoolExecutor(max_workers=4) as pool:
        rows = list(pool.map(lambda q: index.search([q], 10, num_threads=1), queries))
    np.testing.assert_array_equal(np.vstack([r.ids for r in rows]), sequential.ids)
    np.testing.assert_array_equal(np.vstack([r.scores for r in rows]), sequential.scores)


@pytest.mark.parametrize("mmap", [False, True])
def test_save_load_round_trip(index: SpladeIndex, tmp_path: Path, mmap: bool) -> None:
    index.save(tmp_path / "splade")
    loaded = SpladeIndex.load(tmp_path / "splade", encoder=HashingSparseEncoder(), mmap=mmap)
    before, after = index.search(QUERIES, 10), loaded.search(QUERIES, 10)
    np.testing.assert_array_equal(before.ids, after.ids)
    np.testing.assert_array_equal(before.scores, after.scores)
    assert loaded.doc_ids[:2] == ["d0", "d1"] and loaded.scale == index.scale


def test_wrong_model_is_refused(index: SpladeIndex, tmp_path: Path) -> None:
    index.save(tmp_path / "splade")
    with pytest.raises(ValueError, match="built by the model"):
        SpladeIndex.load(tmp_path / "splade", encoder=HashingSparseEncoder(name="other"))
    with pytest.raises(ValueError, match="built by the model"):
        SpladeIndex.load(tmp_path / "splade", encoder=HashingSparseEncoder(vocab_size=65))


def test_corrupt_components(index: SpladeIndex, tmp_path: Path) -> None:
    index.save(tmp_path / "splade")
    encoder = HashingSparseEncoder()
    flipped = copy_index(tmp_path / "splade", tmp_path / "flipped")
    data = bytearray((flipped / "impacts.npy").read_bytes())
    data[-1] ^= 0xFF
    (flipped / "impacts.npy").write_bytes(bytes(data))
    with pytest.raises(IndexFormatError):
        SpladeIndex.load(flipped, encoder=encoder)
    docs = np.load(tmp_path / "splade" / "doc_ids.npy")
    # Checked at this load (verify is not mmap): see test_splade_mapped for the lazy checks.
    malformed = r"the postings of term \d+ are malformed; the index is corrupt, rebuild it"
    for i, (name, array, match) in enumerate(
        [
            ("doc_ids", docs[::-1].copy(), malformed),
            ("doc_ids", docs + 1000, malformed),
            ("impacts", np.zeros(len(docs), np.uint8), malformed),
            ("impacts", np.ones(len(docs) - 1, np.uint8), "delimit"),
            ("doc_ids", docs.astype(np.int64), "int64"),
        ]
    ):
        bad = copy_index(tmp_path / "splade", tmp_path / f"bad-{i}")
        rewrite(bad, name, array)  # checksums agree: only the structure checks catch it
        with pytest.raises(IndexFormatError, match=match):
            SpladeIndex.load(bad, encoder=encoder)
    (tmp_path / "splade" / "posting_offsets.npy").unlink()
    with pytest.raises(IndexFormatError):
        SpladeIndex.load(tmp_path / "splade", encoder=encoder)


def test_build_errors() -> None:
    with pytest.raises(ValueError, match="empty"):
        SpladeIndex.build([], encoder=HashingSparseEncoder())
    with pytest.raises(ValueError, match="duplicate"):
        SpladeIndex.build([{"_id": "a", "text": "x"}] * 2, encoder=HashingSparseEncoder())
    with pytest.raises(TypeError):
        SpladeIndex.build([3], encoder=HashingSparseEncoder())  # type: ignore[list-item]


# -- the C++ inversion ------------------------------------------------------------------------


def invert_reference(offsets, terms, impacts, n_terms):  # type: ignore[no-untyped-def]
    """Term-major postings by a Python loop over documents."""
    postings: list[list[tuple[int, int]]] = [[] for _ in range(n_terms)]
    for doc in range(len(offsets) - 1):
        for i in range(offsets[doc], offsets[doc + 1]):
            if impacts[i]:
                postings[terms[i]].append((doc, int(impacts[i])))
    return postings


def test_invert_matches_the_reference() -> None:
    rng = np.random.default_rng(0)
    n_docs, n_terms = 300, 50
    rows = [rng.choice(n_terms, size=rng.integers(0, 12), replace=False) for _ in range(n_docs)]
    offsets = np.zeros(n_docs + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=offsets[1:])
    terms = np.concatenate(rows).astype(np.int32)
    impacts = rng.integers(0, 256, size=len(terms)).astype(np.uint8)
    out = _core.invert_impacts(offsets, terms, impacts, n_terms)
    expected = invert_reference(offsets, terms, impacts, n_terms)
    for term in range(n_terms):
        span = slice(out["posting_offsets"][term], out["posting_offsets"][term + 1])
        got = list(zip(out["doc_ids"][span].tolist(), out["impacts"][span].tolist()))
        assert got == expected[term]
        assert out["doc_freqs"][term] == len(expected[term])


def test_invert_edge_cases() -> None:
    empty = _core.invert_impacts(
        np.zeros(4, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint8), 3
    )
    np.testing.assert_array_equal(empty["posting_offsets"], [0, 0, 0, 0])
    assert len(empty["doc_ids"]) == 0
    none = _core.invert_impacts(
        np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.uint8), 0
    )
    np.testing.assert_array_equal(none["posting_offsets"], [0])
    ok = (np.array([0, 2], np.int64), np.array([1, 0], np.int32), np.array([3, 4], np.uint8))
    for offsets, terms, impacts, n_terms, match in [
        (ok[0], np.array([1, 3], np.int32), ok[2], 3, "outside the vocabulary"),
        (ok[0], np.array([1, -1], np.int32), ok[2], 3, "outside the vocabulary"),
        (ok[0], np.array([1, 1], np.int32), ok[2], 3, "repeats term id 1"),
        (np.array([0, 1], np.int64), *ok[1:], 3, "end at len"),
        (np.array([0, 2, 1, 2], np.int64), *ok[1:], 3, "must not decrease"),
        (ok[0], ok[1], np.array([3], np.uint8), 3, "same length"),
        (np.zeros(0, np.int64), ok[1], ok[2], 3, "non-empty"),
        (*ok, -1, "n_terms"),
    ]:
        with pytest.raises(ValueError, match=match):
            _core.invert_impacts(offsets, terms, impacts, n_terms)
    for args in [
        (ok[0].astype(np.int32), *ok[1:], 3),
        (ok[0], ok[1].astype(np.int64), ok[2], 3),
        (*ok[:2], ok[2].astype(np.float32), 3),
        (ok[0], np.array([1, 9, 0, 9], np.int32)[::2], ok[2], 3),  # not contiguous
    ]:
        with pytest.raises(TypeError):
            _core.invert_impacts(*args)
