"""The BM25 leg's title weight: the engine's BM25 scores equal a plain-numpy BM25 over texts
whose titles are counted ``title_weight`` times (the BM25F form it documents), after adds,
deletes and a merge; the setting is recorded, reloaded and checked."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from bm25_oracle import NumpyBM25
from live_oracle import QUERIES, document

from hybrid_engine import Analyzer, HybridIndex
from hybrid_engine.result import PAD_ID

DOCS = [document(i) for i in range(30)]


def _oracle(docs: list[dict], weight: int, query: str) -> dict[str, float]:
    """Plain-numpy BM25 (the engine's defaults) over each document's title repeated
    ``weight`` times, then its text."""
    analyzer = Analyzer()
    tokens = [analyzer.analyze(" ".join([doc["title"]] * weight + [doc["text"]])) for doc in docs]
    scores, matched = NumpyBM25(tokens, k1=0.9, b=0.4, method="lucene").scores(
        analyzer.analyze(query)
    )
    return {doc["_id"]: float(s) for doc, s, m in zip(docs, scores, matched, strict=True) if m}


def _bm25_hits(engine: HybridIndex, query: str) -> dict[str, float]:
    snapshot = engine._state.snapshot
    found = snapshot.search_bm25([query], 100, None, snapshot.allowed(None))
    return {
        engine.doc_ids[int(i)]: float(s)
        for i, s in zip(found.ids[0], found.scores[0], strict=True)
        if i != PAD_ID
    }


@pytest.mark.parametrize("weight", [1, 3])
def test_the_title_counts_weight_times(weight: int, tmp_path: Path) -> None:
    engine = HybridIndex.build(
        DOCS[:20], retrievers=("bm25",), bm25_options={"title_weight": weight}
    )
    engine.add(DOCS[20:])
    engine.delete(["d3", "d7"])
    engine.commit()
    live = [doc for doc in DOCS if doc["_id"] not in ("d3", "d7")]
    for query in QUERIES:  # live statistics over two segments, deletions left out
        got, expected = _bm25_hits(engine, query), _oracle(live, weight, query)
        assert got.keys() == expected.keys()
        assert np.allclose([got[k] for k in expected], list(expected.values()), rtol=1e-5)
    engine.merge()
    engine.save(tmp_path / "index")
    loaded = HybridIndex.load(tmp_path / "index")
    for query in QUERIES:
        got, expected = _bm25_hits(loaded, query), _oracle(live, weight, query)
        assert np.allclose([got[k] for k in expected], list(expected.values()), rtol=1e-5)


@pytest.mark.parametrize("weight", [0, 11, 1.5, "2", True])
def test_a_bad_title_weight_is_refused(weight: object) -> None:
    with pytest.raises(ValueError, match="title_weight"):
        HybridIndex.build(DOCS, retrievers=("bm25",), bm25_options={"title_weight": weight})
