"""HybridIndex: its search equals fusing its legs by hand; save/load; MMR; timings; errors."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from dense_oracle import HashingEncoder
from sparse_oracle import HashingSparseEncoder

from hybrid_engine import BM25Index, DenseIndex, IndexFormatError, SpladeIndex, fuse, mmr
from hybrid_engine.engine.index import HybridIndex

WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()
CORPUS = [
    {
        "_id": f"d{i}",
        "title": WORDS[i % 15],
        "text": " ".join(WORDS[(i * 7 + j) % 15] for j in range(5)),
    }
    for i in range(40)
]
QUERIES = ["cat on the mat", "river stone", "snow and wind fire", "moon"]


@pytest.fixture(scope="module")
def engine() -> HybridIndex:
    return HybridIndex.build(CORPUS, encoder=HashingEncoder())


def test_search_is_fusion_of_the_legs(engine: HybridIndex) -> None:
    bm25 = BM25Index.build(CORPUS)
    dense = DenseIndex.build(CORPUS, encoder=HashingEncoder())
    legs = [bm25.search(QUERIES, 100), dense.search(QUERIES, 100)]
    for method in ("dbsf", "rrf", "minmax"):
        expected = fuse(legs, 10, method=method, depth=100)
        got = engine.search(QUERIES, 10, fusion=method)
        np.testing.assert_array_equal(got.ids, expected.ids)
        np.testing.assert_array_equal(got.scores, expected.scores)
    assert engine.doc_ids[:3] == ["d0", "d1", "d2"]
    assert engine.retrievers == ("bm25", "dense")


def test_timings_and_mmr(engine: HybridIndex) -> None:
    plain = engine.search(QUERIES, 5)
    assert set(plain.timings) == {"bm25", "dense", "fusion", "total"}
    assert all(t >= 0 for t in plain.timings.values())
    diverse = engine.search(QUERIES, 5, mmr=0.5, mmr_candidates=20)
    assert "mmr" in diverse.timings
    fused = engine.search(QUERIES, 20)
    encoder = HashingEncoder()
    expected = mmr(fused, encoder.encode(QUERIES), engine.dense.vectors, 5, lambda_=0.5)
    np.testing.assert_array_equal(diverse.ids, expected.ids)


def test_mmr_picks_k_from_at_least_k_candidates(engine: HybridIndex) -> None:
    """k above mmr_candidates: MMR picks k of the fused top max(k, mmr_candidates), so every
    row is full; with lambda 1 its order is the candidates' dense relevance (brute force)."""
    k = len(CORPUS)  # 40, above the default mmr_candidates of 30
    result = engine.search(QUERIES, k, mmr=1.0)
    assert result.ids.shape == (len(QUERIES), k)
    assert np.all(result.ids >= 0), "a row came back short of k hits"
    fused = engine.search(QUERIES, k)
    query_vectors = HashingEncoder().encode(QUERIES).astype(np.float64)
    doc_vectors = engine.dense.vectors.astype(np.float64)
    for row, query in enumerate(query_vectors):
        pool = fused.ids[row][fused.ids[row] >= 0]
        relevance = (doc_vectors[pool] @ query).astype(np.float32)
        order = np.lexsort((pool, -relevance))
        np.testing.assert_array_equal(result.ids[row], pool[order])
        np.testing.assert_array_equal(result.scores[row], relevance[order])
    with pytest.raises(ValueError, match="mmr_candidates must be an int >= 1, got 0"):
        engine.search(QUERIES, 5, mmr=0.5, mmr_candidates=0)


def test_single_retriever(engine: HybridIndex) -> None:
    only_bm25 = HybridIndex.build(CORPUS, retrievers=["bm25"])
    result = only_bm25.search(QUERIES, 5, fusion="rrf")
    reference = BM25Index.build(CORPUS).search(QUERIES, 5)
    np.testing.assert_array_equal(result.ids, reference.ids)  # one list keeps its order
    with pytest.raises(ValueError, match="mmr needs the dense"):
        only_bm25.search(QUERIES, 5, mmr=0.5)


def test_save_load_round_trip(engine: HybridIndex, tmp_path: Path) -> None:
    engine.save(tmp_path / "hybrid")
    loaded = HybridIndex.load(tmp_path / "hybrid", encoder=HashingEncoder())
    before, after = engine.search(QUERIES, 10), loaded.search(QUERIES, 10)
    np.testing.assert_array_equal(before.ids, after.ids)
    np.testing.assert_array_equal(before.scores, after.scores)
    # A live index directory: the commit point, one segment, the writer's lock.
    top = sorted(p.name for p in (tmp_path / "hybrid").iterdir())
    assert top == ["commit-00000001.json", "seg-000000", "write.lock"]
    segment = {p.name for p in (tmp_path / "hybrid" / "seg-000000").iterdir()}
    assert {"bm25", "dense", "manifest.json", "text_zframes.npy", "title_zframes.npy"} <= segment
    assert loaded.titles[:] == [doc["title"] for doc in CORPUS]
    assert loaded.texts[:] == [f"{doc['title']} {doc['text']}" for doc in CORPUS]
    with pytest.raises(ValueError, match="built by the model"):
        HybridIndex.load(tmp_path / "hybrid", encoder=HashingEncoder(name="other"))


def test_titles_are_empty_where_a_document_has_none(tmp_path: Path) -> None:
    corpus = [
        "plain cat text",
        {"text": "dog"},
        {"title": "", "text": "fish"},
        {"title": "Sea", "text": "waves"},
    ]
    engine = HybridIndex.build(corpus, retrievers=["bm25"])
    assert engine.titles[:] == ["", "", "", "Sea"]
    engine.save(tmp_path / "hybrid")
    assert HybridIndex.load(tmp_path / "hybrid").titles[:] == engine.titles[:]
    with pytest.raises(TypeError, match="'title' is int"):
        HybridIndex.build([{"title": 3, "text": "cat"}], retrievers=["bm25"])


def test_damaged_directory(engine: HybridIndex, tmp_path: Path) -> None:
    engine.save(tmp_path / "hybrid")
    (tmp_path / "hybrid" / "seg-000000" / "bm25" / "manifest.json").unlink()
    with pytest.raises(IndexFormatError):
        HybridIndex.load(tmp_path / "hybrid", encoder=HashingEncoder())
    with pytest.raises(IndexFormatError):
        HybridIndex.load(tmp_path / "absent", encoder=HashingEncoder())


@pytest.mark.parametrize(
    ("retrievers", "match"), [([], "unknown retriever"), (["bm25", "colbert"], "colbert")]
)
def test_bad_retrievers(retrievers, match) -> None:
    with pytest.raises(ValueError, match=match):
        HybridIndex.build(CORPUS, retrievers=retrievers, encoder=HashingEncoder())


def test_blank_document_fails_before_encoding() -> None:
    encoder = HashingEncoder()
    with pytest.raises(ValueError, match="document number 2 has no title and no text"):
        HybridIndex.build(["fine text", "   "], encoder=encoder)
    assert encoder.calls == []


def test_concurrent_searches_equal_sequential(engine: HybridIndex) -> None:
    queries = [f"{a} {b}" for a in WORDS for b in WORDS[:4]]
    sequential = [engine.search([q], 10) for q in queries]
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(lambda q: engine.search([q], 10, num_threads=1), queries))
    for one, other in zip(sequential, concurrent):
        np.testing.assert_array_equal(one.ids, other.ids)
        np.testing.assert_array_equal(one.scores, other.scores)


def test_concurrent_searches_with_the_onnx_encoder(encoder) -> None:
    """The same with the real ONNX Runtime session shared by the threads."""
    real = HybridIndex.build(CORPUS, encoder=encoder)
    queries = [f"{a} {b}" for a in WORDS for b in WORDS[:2]]
    sequential = [real.search([q], 10) for q in queries]
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(lambda q: real.search([q], 10), queries))
    for one, other in zip(sequential, concurrent):
        np.testing.assert_array_equal(one.ids, other.ids)
        np.testing.assert_allclose(one.scores, other.scores, rtol=0, atol=1e-6)


# -- three-way: BM25, dense and SPLADE ------------------------------------------------------


@pytest.fixture(scope="module")
def engine3() -> HybridIndex:
    return HybridIndex.build(
        CORPUS,
        retrievers=("splade", "bm25", "dense"),  # legs keep RETRIEVERS' order
        encoder=HashingEncoder(),
        splade_encoder=HashingSparseEncoder(),
    )


def test_three_way_search_is_fusion_of_the_three_legs(engine3: HybridIndex) -> None:
    legs = [
        BM25Index.build(CORPUS).search(QUERIES, 100),
        DenseIndex.build(CORPUS, encoder=HashingEncoder()).search(QUERIES, 100),
        SpladeIndex.build(CORPUS, encoder=HashingSparseEncoder()).search(QUERIES, 100),
    ]
    assert engine3.retrievers == ("bm25", "dense", "splade")
    for method, weights, by_name in (
        ("dbsf", None, None),
        ("rrf", None, None),
        ("rrf", [1.0, 0.5, 2.0], {"splade": 2.0, "bm25": 1.0, "dense": 0.5}),
        ("dbsf", [1.0, 3.0, 1.0], {"dense": 3.0}),  # a retriever not named weighs 1
    ):
        expected = fuse(legs, 10, method=method, weights=weights, depth=100)
        got = engine3.search(QUERIES, 10, fusion=method, weights=by_name)
        np.testing.assert_array_equal(got.ids, expected.ids)
        np.testing.assert_array_equal(got.scores, expected.scores)
    assert set(got.timings) == {"bm25", "dense", "splade", "fusion", "total"}


@pytest.mark.parametrize(
    ("weights", "error", "match"),
    [
        ([1.0, 2.0], TypeError, r"weights must be a dict of retriever name to weight, e\.g\."),
        ({"colbert": 1.0}, ValueError, r"\['colbert'\].*retrievers are \['bm25', 'dense'\]"),
        ({"splade": 1.0}, ValueError, "does not combine"),
        ({"dense": "2"}, TypeError, r"weights\['dense'\] is str, expected a number"),
        ({"dense": -1.0}, ValueError, "weights must be finite, >= 0"),
    ],
)
def test_bad_weights(engine: HybridIndex, weights, error, match: str) -> None:
    with pytest.raises(error, match=match):
        engine.search(QUERIES, 5, weights=weights)


def test_three_way_save_load(engine3: HybridIndex, tmp_path: Path) -> None:
    engine3.save(tmp_path / "hybrid3")
    segment = {p.name for p in (tmp_path / "hybrid3" / "seg-000000").iterdir()}
    assert {"bm25", "dense", "splade", "manifest.json"} <= segment
    loaded = HybridIndex.load(
        tmp_path / "hybrid3", encoder=HashingEncoder(), splade_encoder=HashingSparseEncoder()
    )
    before, after = engine3.search(QUERIES, 10), loaded.search(QUERIES, 10)
    np.testing.assert_array_equal(before.ids, after.ids)
    np.testing.assert_array_equal(before.scores, after.scores)
    with pytest.raises(ValueError, match="built by the model"):
        HybridIndex.load(
            tmp_path / "hybrid3",
            encoder=HashingEncoder(),
            splade_encoder=HashingSparseEncoder(name="other"),
        )


def test_a_mapped_load_leaves_the_splade_postings_unread(
    engine3: HybridIndex, tmp_path: Path
) -> None:
    """The engine's ``mmap`` reaches the SPLADE leg with its default ``verify``: the postings
    are mapped, none checked until a search reads it."""
    engine3.save(tmp_path / "hybrid3")
    mapped = HybridIndex.load(
        tmp_path / "hybrid3",
        encoder=HashingEncoder(),
        splade_encoder=HashingSparseEncoder(),
        mmap=True,
    )
    splade = mapped.splade
    assert splade is not None and splade._check is not None
    assert isinstance(splade._arrays["impacts"], np.memmap)
    assert not splade._check._checked.any()
    before, after = engine3.search(QUERIES, 10), mapped.search(QUERIES, 10)
    np.testing.assert_array_equal(before.ids, after.ids)
    np.testing.assert_array_equal(before.scores, after.scores)
    assert splade._check._checked.any()


def test_three_way_concurrent_searches_equal_sequential(engine3: HybridIndex) -> None:
    queries = [f"{a} {b}" for a in WORDS for b in WORDS[:3]]
    sequential = [engine3.search([q], 10) for q in queries]
    with ThreadPoolExecutor(max_workers=4) as pool:
        concurrent = list(pool.map(lambda q: engine3.search([q], 10, num_threads=1), queries))
    for one, other in zip(sequential, concurrent):
        np.testing.assert_array_equal(one.ids, other.ids)
        np.testing.assert_array_equal(one.scores, other.scores)
