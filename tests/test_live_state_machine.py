"""Random sequences of add / upsert / delete / commit / merge / reopen (a hypothesis state
machine): after every commit BM25 and SPLADE (ids and scores) equal a fresh build of the live
documents, the fused engine equals a fresh engine, and a model of the live set agrees."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from dense_oracle import HashingEncoder
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from live_oracle import (
    assert_bm25_equals_fresh,
    assert_hybrid_equals_fresh,
    assert_splade_equals_fresh,
    document,
    live_documents,
    new_engine,
)
from sparse_oracle import HashingSparseEncoder

from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.live import MergePolicy

IDS = st.integers(min_value=0, max_value=40)


class LiveEngineMachine(RuleBasedStateMachine):
    """The engine against a dict of what it should hold after each commit."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="live-machine-"))
        self.engine = new_engine([document(i) for i in range(5)], splade=True)
        # Small thresholds so that merges and rewrites happen within a few steps.
        self.engine._state.policy = MergePolicy(deletes_allowed=0.3, max_segments=3, merge_factor=2)
        self.engine.save(self.folder / "live")
        self.committed = {f"d{i}": 0 for i in range(5)}  # id -> version
        self.staged = dict(self.committed)

    def teardown(self) -> None:
        self.engine.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    @rule(ids=st.lists(IDS, min_size=1, max_size=4, unique=True))
    def add(self, ids: list[int]) -> None:
        new = [i for i in ids if f"d{i}" not in self.staged]
        if new:
            self.engine.add([document(i) for i in new])
            self.staged.update({f"d{i}": 0 for i in new})

    @rule(ids=st.lists(IDS, min_size=1, max_size=3, unique=True), version=st.integers(1, 3))
    def upsert(self, ids: list[int], version: int) -> None:
        self.engine.upsert([document(i, version) for i in ids])
        for i in ids:
            self.staged.pop(f"d{i}", None)  # an upsert moves the document to the end
            self.staged[f"d{i}"] = version

    @rule(ids=st.lists(IDS, min_size=1, max_size=3, unique=True))
    def delete(self, ids: list[int]) -> None:
        names = [f"d{i}" for i in ids]
        count = self.engine.delete(names, missing_ok=True)
        assert count == sum(name in self.staged for name in names)
        for name in names:
            self.staged.pop(name, None)

    @rule()
    def commit(self) -> None:
        self.engine.commit()
        self.committed = dict(self.staged)
        self._check()

    @rule()
    def merge(self) -> None:
        self.engine.merge()
        self.committed = dict(self.staged)
        assert self.engine.num_segments <= 1
        self._check()

    @precondition(lambda self: self.staged == self.committed)
    @rule()
    def reopen(self) -> None:
        self.engine.close()
        policy = self.engine._state.policy
        self.engine = HybridIndex.load(
            self.folder / "live", encoder=HashingEncoder(), splade_encoder=HashingSparseEncoder()
        )
        self.engine._state.policy = policy
        self._check()

    @invariant()
    def searchable(self) -> None:
        assert len(self.engine) == len(self.committed)

    def _check(self) -> None:
        docs = live_documents(self.engine)
        assert {d["_id"]: d["metadata"]["v"] for d in docs} == self.committed
        assert_bm25_equals_fresh(self.engine)
        assert_splade_equals_fresh(self.engine)
        assert_hybrid_equals_fresh(self.engine)


LiveEngineMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_live_engine_state_machine = LiveEngineMachine.TestCase
