"""``HybridIndex.holds`` and ``generation``, and a snapshot scoring with a larger collection's
BM25 statistics (what a shard of a sharded index does), against a fresh build of that
collection."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from live_oracle import document, new_engine

from hybrid_engine.lexical.index import BM25Index
from hybrid_engine.lexical.statistics import CollectionStats


def test_holds_follows_what_is_staged(tmp_path: Path) -> None:
    engine = new_engine([document(i) for i in range(6)])
    engine.save(tmp_path / "live")
    engine.add([document(10)])
    engine.delete(["d2"])
    assert engine.holds(["d1", "d2", "d10", "d99"]) == [True, False, True, False]
    engine.commit()
    assert engine.holds(["d1", "d2", "d10"]) == [True, False, True]
    with pytest.raises(TypeError, match="use"):
        engine.holds("d1")
    engine.close()


def test_generation_counts_commits(tmp_path: Path) -> None:
    engine = new_engine([document(i) for i in range(4)])
    engine.save(tmp_path / "live")
    first = engine.generation
    engine.add([document(9)])
    engine.commit()
    assert engine.generation == first + 1
    assert sorted(p.name for p in (tmp_path / "live").glob("commit-*.json")) == [
        f"commit-{engine.generation:08d}.json"
    ]
    engine.close()


def test_outside_statistics_score_as_the_whole_collection() -> None:
    """Half the documents in a snapshot, scored with the counts of all of them: its scores
    equal a BM25 index built over every document, on the documents it holds."""
    docs = [document(i) for i in range(40)]
    part = new_engine(docs[:20])
    whole = BM25Index.build(docs)
    snapshot = part.pinned()._snapshot
    stats = whole.statistics
    terms = snapshot.term_map.terms[: len(snapshot.bm25_counts[1])]
    ids = {term: i for i, term in enumerate(whole.terms)}
    counts = np.array([whole.doc_freqs[ids[t]] if t in ids else 0 for t in terms], np.int64)
    view = snapshot.with_bm25_statistics(CollectionStats(stats.n_docs, stats.total_length), counts)
    queries = [" ".join(document(i)["text"].split()[:2]) for i in range(20)]
    got = view.search_bm25(queries, 5, None, view.allowed(None))
    allowed = np.zeros(len(docs), bool)
    allowed[:20] = True
    want = whole.search(queries, 5, allowed=allowed)
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.scores, want.scores)
    with pytest.raises(ValueError, match="must hold this snapshot"):
        snapshot.with_bm25_statistics(CollectionStats(stats.n_docs, stats.total_length), counts * 0)
