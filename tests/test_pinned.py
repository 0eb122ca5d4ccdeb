"""``HybridIndex.pinned``: searches and reads of the copy stay on one commit whatever is
committed or merged later (checked against a fresh build of that commit's documents), the copy
cannot write, and the query strategies combine their steps on one commit even when the engine
is changed and merged between two of them."""

from __future__ import annotations

import pytest
from dense_oracle import HashingEncoder

from hybrid_engine import HybridIndex, PinnedEngineError
from hybrid_engine.strategies import decompose, fuse_strategies, multi_hop

WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()
CORPUS = [
    {
        "_id": f"d{i}",
        "title": WORDS[i % 15],
        "text": " ".join(WORDS[(i * 7 + j) % 15] for j in range(5)),
    }
    for i in range(60)
]
LATER = [
    {"_id": f"n{i}", "title": "cat", "text": f"cat mat river {WORDS[i % 15]}"} for i in range(30)
]
QUERIES = ["cat on the mat", "river stone", "snow and wind fire"]


def build(corpus: list[dict]) -> HybridIndex:
    return HybridIndex.build(corpus, encoder=HashingEncoder())


def change_and_merge(engine: HybridIndex) -> None:
    """Delete every third document, add others, commit, and merge to one segment: every
    position after the first deleted one moves."""
    engine.delete([doc["_id"] for doc in CORPUS[::3]])
    engine.add(LATER)
    engine.commit()
    engine.merge()


def test_a_pinned_engine_searches_its_commit_after_later_commits_and_merges() -> None:
    engine = build(CORPUS)
    pinned = engine.pinned()
    change_and_merge(engine)
    reference = build(CORPUS)  # a fresh build of the pinned commit's documents
    got, want = pinned.search(QUERIES, 10), reference.search(QUERIES, 10)
    assert got.doc_ids == want.doc_ids
    assert [[h.text for h in row] for row in got.hits()] == [
        [h.text for h in row] for row in want.hits()
    ]
    assert len(pinned) == len(CORPUS) and list(pinned.doc_ids) == [d["_id"] for d in CORPUS]
    assert pinned.get(["d0"])[0].text == CORPUS[0]["text"]  # deleted since, not for the copy
    assert pinned.pinned().search(QUERIES, 10).doc_ids == want.doc_ids  # keeps its commit
    # The engine itself moved on.
    assert len(engine) == len(CORPUS) - len(CORPUS[::3]) + len(LATER)
    assert engine.search(QUERIES, 10).doc_ids != want.doc_ids


@pytest.mark.parametrize(
    "write",
    [
        lambda e: e.add(LATER[:1]),
        lambda e: e.upsert(LATER[:1]),
        lambda e: e.delete(["d1"]),
        lambda e: e.commit(),
        lambda e: e.merge(),
    ],
)
def test_a_pinned_engine_cannot_write(write) -> None:
    engine = build(CORPUS)
    with pytest.raises(PinnedEngineError, match="pinned to one commit"):
        write(engine.pinned())
    write(engine)  # the engine it was pinned from still can


class ChangingGenerator:
    """Answers every prompt with ``output``; on its first call it changes and merges
    ``engine`` (another thread's commit, arriving between two steps of a strategy)."""

    def __init__(self, output: str, engine: HybridIndex | None = None) -> None:
        self.output, self.engine = output, engine

    def __call__(self, prompt: str) -> str:
        if self.engine is not None:
            change_and_merge(self.engine)
            self.engine = None
        return self.output


@pytest.mark.parametrize(
    "run",
    [
        lambda e, g: decompose(e, QUERIES, g, 10),
        lambda e, g: multi_hop(e, QUERIES, g, 10, max_hops=2),
        lambda e, g: fuse_strategies(e, QUERIES, g, ("hybrid", "decompose", "multi-hop")),
    ],
    ids=["decompose", "multi_hop", "fuse_strategies"],
)
def test_strategies_combine_steps_on_one_commit_across_a_merge(run) -> None:
    output = "1. river stone\n2. fish bird"
    engine = build(CORPUS)
    changed = run(engine, ChangingGenerator(output, engine))
    unchanged = run(build(CORPUS), ChangingGenerator(output))
    assert changed.doc_ids == unchanged.doc_ids
    assert [step.doc_ids for t in changed.traces for step in t.steps] == [
        step.doc_ids for t in unchanged.traces for step in t.steps
    ]
