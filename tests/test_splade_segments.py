"""SpladeIndex as segments of a live index: a fixed quantization scale, indexing precomputed
vectors (``from_vectors``) and reading them back (``document_vectors``) without changing an
impact, indexes of one scale merged by score equal one index over the union, and ``allowed``
masks against a plain-numpy dot product."""

from __future__ import annotations

import numpy as np
import pytest
from sparse_oracle import HashingSparseEncoder, dense_rows, top_k
from test_splade_index import CORPUS, QUERIES, texts

from hybrid_engine import SparseVectors, SpladeIndex

VOCAB = 64
N_DOCS = len(CORPUS)
ARRAYS = ("posting_offsets", "doc_ids", "impacts")


def assert_same_postings(a: SpladeIndex, b: SpladeIndex) -> None:
    for name in ARRAYS:
        np.testing.assert_array_equal(a._arrays[name], b._arrays[name], err_msg=name)
    assert a.scale == b.scale


def concat(parts: list[SparseVectors]) -> SparseVectors:
    """Rows of several CSR blocks, one after another."""
    ends = np.cumsum([p.offsets[-1] for p in parts])[:-1]
    offsets = np.concatenate(
        [parts[0].offsets] + [p.offsets[1:] + e for p, e in zip(parts[1:], ends)]
    )
    return SparseVectors(
        offsets,
        np.concatenate([p.terms for p in parts]),
        np.concatenate([p.weights for p in parts]),
    )


def impact_matrix(index: SpladeIndex) -> np.ndarray:
    """uint8 impacts as a dense ``(n_docs, vocab)`` matrix, read from the postings."""
    out = np.zeros((index.num_documents, index.vocab_size), np.int64)
    for term in range(index.vocab_size):
        docs, impacts = index.postings(term)
        out[docs, term] = impacts
    return out


# -- a fixed scale ------------------------------------------------------------------------------


@pytest.mark.parametrize("factor", [0.5, 1.0, 3.0])
def test_a_given_scale_quantizes_with_it_and_saturates(factor: float, tmp_path) -> None:
    encoder = HashingSparseEncoder()
    weights = dense_rows(encoder.encode(texts(CORPUS)), VOCAB)
    scale = float(weights.max()) / 255 * factor  # factor < 1: the largest weights saturate
    index = SpladeIndex.build(CORPUS, encoder=encoder, scale=scale)
    assert index.scale == scale
    expected = np.clip(np.rint(weights / scale), 0, 255)
    np.testing.assert_array_equal(impact_matrix(index), expected)
    assert (np.rint(weights / scale) > 255).any() == (factor < 1.0)  # saturated weights
    queries = dense_rows(encoder.encode(QUERIES), VOCAB)
    want_ids, want_scores = top_k(queries @ (expected * scale).T, 20)
    got = index.search(QUERIES, 20)
    np.testing.assert_array_equal(got.ids, want_ids)
    np.testing.assert_allclose(got.scores, want_scores, rtol=1e-6)
    index.save(tmp_path / "splade")  # the manifest records the given scale
    loaded = SpladeIndex.load(tmp_path / "splade", encoder=encoder)
    assert loaded.scale == scale
    np.testing.assert_array_equal(loaded.search(QUERIES, 20).scores, got.scores)


def test_the_default_scale_is_unchanged() -> None:
    encoder = HashingSparseEncoder()
    default = SpladeIndex.build(CORPUS, encoder=encoder)
    top = float(encoder.encode(texts(CORPUS)).weights.max())
    assert default.scale == top / 255
    assert_same_postings(default, SpladeIndex.build(CORPUS, encoder=encoder, scale=top / 255))


@pytest.mark.parametrize(
    "scale, error", [(0.0, ValueError), (-1.0, ValueError), (np.inf, ValueError),
                     (np.nan, ValueError), ("0.1", TypeError), (True, TypeError)]
)  # fmt: skip
def test_bad_scales_are_refused(scale, error) -> None:
    encoder = HashingSparseEncoder()
    with pytest.raises(error, match="scale"):
        SpladeIndex.build(CORPUS, encoder=encoder, scale=scale)
    assert encoder.calls == 0  # refused before encoding anything
    with pytest.raises(error, match="scale"):
        SpladeIndex.from_vectors(encoder.encode(["a b"]), encoder=encoder, scale=scale)


# -- from_vectors and document_vectors ---------------------------------------------------------


def test_from_vectors_equals_build() -> None:
    encoder = HashingSparseEncoder()
    built = SpladeIndex.build(CORPUS, encoder=encoder)
    calls = encoder.calls
    vectors = HashingSparseEncoder().encode(texts(CORPUS))
    indexed = SpladeIndex.from_vectors(vectors, encoder=encoder, ids=[d["_id"] for d in CORPUS])
    assert encoder.calls == calls  # no encoding
    assert_same_postings(built, indexed)
    assert indexed.doc_ids[:] == built.doc_ids[:] and indexed.model_hash == built.model_hash
    a, b = built.search(QUERIES, 10), indexed.search(QUERIES, 10)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.scores, b.scores)
    plain = SpladeIndex.from_vectors(vectors, encoder=encoder, ids=built.doc_ids)
    assert plain.doc_ids is built.doc_ids
    positions = SpladeIndex.from_vectors(vectors, encoder=encoder)
    assert positions.doc_ids[5] == "5" and not positions.doc_ids.explicit


def test_document_vectors_are_the_quantized_weights_and_round_trip() -> None:
    encoder = HashingSparseEncoder()
    index = SpladeIndex.build(CORPUS, encoder=encoder)
    vectors = index.document_vectors()
    assert vectors.offsets.dtype == np.int64 and vectors.terms.dtype == np.int32
    assert vectors.weights.dtype == np.float32 and len(vectors.offsets) == N_DOCS + 1
    np.testing.assert_array_equal(
        dense_rows(vectors, VOCAB), (impact_matrix(index) * index.scale).astype(np.float32)
    )
    for row in range(N_DOCS):  # terms ascend within a row
        assert np.all(np.diff(vectors.terms[vectors.offsets[row] : vectors.offsets[row + 1]]) > 0)
    again = SpladeIndex.from_vectors(vectors, encoder=encoder, scale=index.scale)
    assert_same_postings(index, again)
    np.testing.assert_array_equal(again.document_vectors().weights, vectors.weights)


def test_document_vectors_of_some_positions() -> None:
    index = SpladeIndex.build(CORPUS, encoder=HashingSparseEncoder())
    full = dense_rows(index.document_vectors(), VOCAB)
    positions = np.array([7, 0, 119, 7, 33], dtype=np.int32)
    part = index.document_vectors(positions)
    np.testing.assert_array_equal(dense_rows(part, VOCAB), full[positions])
    empty = index.document_vectors(np.zeros(0, np.int64))
    assert empty.offsets.tolist() == [0] and len(empty.terms) == 0
    with pytest.raises(IndexError, match="out of range"):
        index.document_vectors(np.array([0, N_DOCS]))
    with pytest.raises(IndexError, match="out of range"):
        index.document_vectors(np.array([-1]))
    for bad in (np.array([1.0]), np.array([[1]])):
        with pytest.raises(TypeError, match="1-d integer array"):
            index.document_vectors(bad)


def test_from_vectors_errors() -> None:
    encoder = HashingSparseEncoder()
    vectors = encoder.encode(["a b", "c"])
    with pytest.raises(ValueError, match="no documents"):
        SpladeIndex.from_vectors(encoder.encode([]), encoder=encoder)
    with pytest.raises(ValueError, match="1 ids for 2 vectors"):
        SpladeIndex.from_vectors(vectors, encoder=encoder, ids=["x"])
    with pytest.raises(ValueError, match="duplicate"):
        SpladeIndex.from_vectors(vectors, encoder=encoder, ids=["x", "x"])
    with pytest.raises(TypeError, match="ids must be"):
        SpladeIndex.from_vectors(vectors, encoder=encoder, ids="xy")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="from_vectors got arrays of"):
        SpladeIndex.from_vectors(
            SparseVectors(vectors.offsets, vectors.terms.astype(np.int64), vectors.weights),
            encoder=encoder,
        )
    with pytest.raises(ValueError, match=r"from_vectors got term ids outside \[0, 64\)"):
        SpladeIndex.from_vectors(
            SparseVectors(vectors.offsets, vectors.terms + 64, vectors.weights), encoder=encoder
        )
    with pytest.raises(TypeError, match="SparseVectors"):
        SpladeIndex.from_vectors([1, 2], encoder=encoder)  # type: ignore[arg-type]


# -- segments of one scale -------------------------------------------------------------------


SCALE = 0.02  # fixed across segments; 255 * SCALE = 5.1 is above every hashed weight (< 3.3)


@pytest.mark.parametrize("k", [1, 5, 40, 200])
@pytest.mark.parametrize("deletions", [False, True])
def test_segments_of_one_scale_merged_by_score_equal_one_index(k: int, deletions: bool) -> None:
    encoder = HashingSparseEncoder()
    parts = [CORPUS[:70], CORPUS[70:]]
    segments = [SpladeIndex.build(docs, encoder=encoder, scale=SCALE) for docs in parts]
    rng = np.random.default_rng(2)
    masks = [rng.random(len(p)) < 0.6 if deletions else np.ones(len(p), bool) for p in parts]
    live = [(i, int(d)) for i, mask in enumerate(masks) for d in np.flatnonzero(mask)]
    union = SpladeIndex.build([parts[i][d] for i, d in live], encoder=encoder, scale=SCALE)
    want = union.search(QUERIES, k)
    rows = [s.search(QUERIES, k, allowed=m) for s, m in zip(segments, masks)]
    for q in range(len(QUERIES)):
        hits = sorted(
            (-float(score), i, int(doc))
            for i, row in enumerate(rows)
            for doc, score in zip(row.ids[q], row.scores[q])
            if doc >= 0
        )[:k]
        n = int((want.ids[q] >= 0).sum())
        assert [(i, d) for _, i, d in hits] == [live[d] for d in want.ids[q, :n]]
        np.testing.assert_array_equal(
            np.array([-s for s, _, _ in hits], np.float32), want.scores[q, :n]
        )


def test_merging_segment_vectors_re_creates_the_union_index() -> None:
    encoder = HashingSparseEncoder()
    segments = [
        SpladeIndex.build(docs, encoder=encoder, scale=SCALE) for docs in (CORPUS[:50], CORPUS[50:])
    ]
    merged = SpladeIndex.from_vectors(
        concat([s.document_vectors() for s in segments]), encoder=encoder, scale=SCALE
    )
    assert_same_postings(merged, SpladeIndex.build(CORPUS, encoder=encoder, scale=SCALE))
    keep = np.arange(50) % 3 != 0  # the first segment with deletions
    part = SpladeIndex.from_vectors(
        segments[0].document_vectors(np.flatnonzero(keep)), encoder=encoder, scale=SCALE
    )
    subset = [doc for doc, kept in zip(CORPUS[:50], keep) if kept]
    assert_same_postings(part, SpladeIndex.build(subset, encoder=encoder, scale=SCALE))


# -- allowed masks -------------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 5, 33, 200])
def test_masked_search_equals_the_masked_dot_product(k: int) -> None:
    encoder = HashingSparseEncoder()
    index = SpladeIndex.build(CORPUS, encoder=encoder)
    docs = impact_matrix(index) * index.scale
    queries = encoder.encode(QUERIES)
    allowed = np.random.default_rng(3).random(N_DOCS) < 0.4
    scores = dense_rows(queries, VOCAB) @ docs.T
    want_ids, want_scores = top_k(np.where(allowed, scores, 0.0), k)  # 0: not a hit
    for given in (QUERIES, queries):
        got = index.search(given, k, allowed=allowed)
        np.testing.assert_array_equal(got.ids, want_ids)
        np.testing.assert_allclose(got.scores, want_scores, rtol=1e-6)


def test_all_false_mask_skips_encoding_and_bad_masks_are_refused() -> None:
    encoder = HashingSparseEncoder()
    index = SpladeIndex.build(CORPUS, encoder=encoder)
    calls = encoder.calls
    result = index.search(QUERIES, 7, allowed=np.zeros(N_DOCS, bool))
    assert np.all(result.ids == -1) and result.ids.shape == (len(QUERIES), 7)
    assert encoder.calls == calls
    for bad, error in ((np.zeros(N_DOCS, np.int8), TypeError), (np.zeros(3, bool), ValueError)):
        with pytest.raises(error, match="allowed"):
            index.search(QUERIES, 7, allowed=bad)
        with pytest.raises(error, match="allowed"):
            index.search(" ", 7, allowed=bad)  # checked even when no query is encoded
