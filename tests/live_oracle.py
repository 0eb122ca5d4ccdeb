"""Fresh builds of a live engine's live documents: the oracle every mutated index must equal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from dense_oracle import HashingEncoder
from sparse_oracle import HashingSparseEncoder

from hybrid_engine import BM25Index, DenseIndex, SpladeIndex
from hybrid_engine.corpus import document_text
from hybrid_engine.engine.index import HybridIndex

WORDS = (
    "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow leaf rock "
    "sand wave hill"
).split()
QUERIES = ["cat on the mat", "river stone", "snow and wind fire", "moon", "wave sand hill"]


def document(i: int, version: int = 0) -> dict[str, Any]:
    """Document ``i`` (``version`` changes its text, for upserts), with metadata."""
    words = [WORDS[(i * 7 + j * (version + 3)) % len(WORDS)] for j in range(3 + i % 5)]
    return {
        "_id": f"d{i}",
        "title": WORDS[(i + version) % len(WORDS)],
        "text": " ".join(words),
        "metadata": {"group": i % 4, "lang": ["en", "fr", "de"][i % 3], "v": version},
    }


def live_documents(engine: HybridIndex) -> list[dict[str, Any]]:
    """The engine's live documents in its order, as documents (what a fresh build reads)."""
    snapshot = engine._state.snapshot
    docs = []
    for s, rows in snapshot.live_positions():
        seg = snapshot.segments[s].docs
        for row in rows:
            docs.append(
                {
                    "_id": seg.ids[row],
                    "title": seg.titles[row],
                    "text": seg.text(row),
                    "metadata": seg.metadata.record(row),
                }
            )
    return docs


def ranked_ids(result: Any, ids: Sequence[str]) -> list[list[str]]:
    return [[ids[int(i)] for i in row if i >= 0] for row in result.ids]


def assert_bm25_equals_fresh(engine: HybridIndex, queries: Sequence[str] = QUERIES) -> None:
    """The engine's BM25 leg (over every segment, live statistics) equals a fresh BM25 build
    of its live documents: the same ids in the same order, the same scores."""
    snapshot = engine._state.snapshot
    docs = live_documents(engine)
    k = max(1, len(docs))
    got = snapshot.search_bm25(list(queries), k, 1, list(snapshot.live))
    if not docs:
        assert (got.ids == -1).all()
        return
    fresh = BM25Index.build(docs)
    expected = fresh.search(list(queries), k)
    assert ranked_ids(got, snapshot.doc_ids) == ranked_ids(expected, [d["_id"] for d in docs])
    np.testing.assert_allclose(got.scores, expected.scores, rtol=1e-6)


def assert_splade_equals_fresh(engine: HybridIndex, queries: Sequence[str] = QUERIES) -> None:
    """The SPLADE leg equals a fresh SPLADE build of the live documents at the engine's
    quantization scale."""
    snapshot = engine._state.snapshot
    docs = live_documents(engine)
    k = max(1, len(docs))
    encoder = engine._state.splade_encoder
    vectors = encoder.encode(list(queries))
    got = snapshot.search_splade(vectors, k, 1, list(snapshot.live))
    if not docs:
        assert (got.ids == -1).all()
        return
    scale = engine._state.config.splade_scale
    fresh = SpladeIndex.build(docs, encoder=encoder, scale=scale)
    expected = fresh.search(vectors, k)
    assert ranked_ids(got, snapshot.doc_ids) == ranked_ids(expected, [d["_id"] for d in docs])
    np.testing.assert_allclose(got.scores, expected.scores, rtol=1e-6)


def assert_hybrid_equals_fresh(engine: HybridIndex, queries: Sequence[str] = QUERIES) -> None:
    """The whole engine (BM25, exact dense and SPLADE when it has it, fused) equals a fresh
    engine of the live documents: the same hits by id, the same scores."""
    docs = live_documents(engine)
    got = engine.search(list(queries), 10)
    if not docs:
        assert (got.ids == -1).all()
        return
    splade = None
    if "splade" in engine.retrievers:
        scale = engine._state.config.splade_scale
        splade = SpladeIndex.build(docs, encoder=HashingSparseEncoder(), scale=scale)
    fresh = HybridIndex.from_legs(
        docs,
        bm25=BM25Index.build(docs),
        dense=DenseIndex.build(docs, encoder=HashingEncoder()),
        splade=splade,
    )
    expected = fresh.search(list(queries), 10)
    assert got.doc_ids == expected.doc_ids
    np.testing.assert_allclose(got.scores, expected.scores, rtol=1e-5)


def assert_dense_hits_live_and_exact(engine: HybridIndex, queries: Sequence[str] = QUERIES) -> None:
    """The dense leg (whatever its graph and codes): every hit is a live document and its
    score the exact float32 inner product of the query's and the document's vectors (the
    candidates are rescored), best first."""
    snapshot = engine._state.snapshot
    docs = {d["_id"]: d for d in live_documents(engine)}
    encoder = HashingEncoder()
    got = snapshot.search_dense(encoder.encode(list(queries)), 10, 1, list(snapshot.live))
    for q, row in enumerate(got.ids):
        hits = [snapshot.doc_ids[int(i)] for i in row if i >= 0]
        assert set(hits) <= set(docs) and len(hits) == min(10, len(docs))
        vectors = encoder.encode([document_text(docs[h], 0)[0] for h in hits])
        exact = vectors @ encoder.encode([queries[q]])[0]
        np.testing.assert_allclose(got.scores[q][: len(hits)], exact, rtol=1e-5, atol=1e-6)
        assert (np.diff(got.scores[q][: len(hits)]) <= 0).all()


def new_engine(
    docs: Sequence[dict[str, Any]],
    splade: bool = False,
    dense_options: dict[str, Any] | None = None,
) -> HybridIndex:
    retrievers = ("bm25", "dense", "splade") if splade else ("bm25", "dense")
    return HybridIndex.build(
        docs,
        retrievers=retrievers,
        encoder=HashingEncoder(),
        splade_encoder=HashingSparseEncoder() if splade else None,
        dense_options=dense_options,
    )
