"""The shard's side of atomic commits (``distributed.transactions``), in-process, no Ray: a
prepared transaction is applied by the process that staged it, or replayed from its file by a
new process (a restart) when it was decided and removed when it was not; replaying one a shard
already committed changes nothing; malformed records are refused by name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hybrid_engine import HybridIndex, IndexFormatError
from hybrid_engine.distributed.partition import SEQ_FIELD
from hybrid_engine.distributed.transactions import (
    prepared_files,
    prepared_path,
    read_decided,
    read_prepared,
    write_decided,
)
from hybrid_engine.distributed.worker import ShardWorker

BUILD = {"retrievers": ["bm25"]}


def _doc(doc_id: str, text: str, seq: int) -> dict:
    return {"_id": doc_id, "text": text, "metadata": {SEQ_FIELD: seq}}


def _state(path: Path) -> dict[str, str]:
    engine = HybridIndex.load(path)
    ids = list(engine.doc_ids)
    live = [i for i, held in zip(ids, engine.holds(ids), strict=True) if held]
    state = {hit.id: hit.text for hit in engine.get(live)}
    engine.close()
    return state


@pytest.fixture
def shard(tmp_path: Path) -> Path:
    path = tmp_path / "shard-000"
    worker = ShardWorker(str(path), {}, BUILD)
    worker.stage([_doc("a", "alpha", 0), _doc("b", "beta", 1), _doc("c", "gamma", 2)], False)
    worker.close()
    return path


def _staged(path: Path) -> ShardWorker:
    """A worker with transaction 1 staged and prepared: add d, upsert a, delete b."""
    worker = ShardWorker(str(path), {}, BUILD)
    worker.add([_doc("d", "delta", 3)])
    worker.upsert([_doc("a", "alpha two", 4)])
    worker.delete(["b"], False)
    worker.prepare_commit(1)
    return worker


COMMITTED = {"a": "alpha two", "c": "gamma", "d": "delta"}


def test_the_process_that_prepared_applies_and_removes_the_file(shard: Path) -> None:
    worker = _staged(shard)
    assert prepared_files(shard) == [(1, prepared_path(shard, 1))]
    assert _state(shard) == {"a": "alpha", "b": "beta", "c": "gamma"}  # prepared: not visible
    worker.apply_commit(1)
    assert _state(shard) == COMMITTED and prepared_files(shard) == []
    worker.apply_commit(1)  # again: nothing staged, nothing changes
    worker.close()
    assert _state(shard) == COMMITTED


@pytest.mark.parametrize(("decided", "expected"), [(1, COMMITTED), (0, None)])
def test_a_restarted_shard_recovers_a_decided_transaction_only(
    shard: Path, decided: int, expected: dict | None
) -> None:
    before = _state(shard)
    _staged(shard).close()  # the process dies: its staged changes with it
    restarted = ShardWorker(str(shard), {}, BUILD)
    restarted.recover(decided)
    restarted.close()
    assert _state(shard) == (expected if expected is not None else before)
    assert prepared_files(shard) == []


def test_a_restarted_shard_applies_from_the_file(shard: Path) -> None:
    _staged(shard).close()
    restarted = ShardWorker(str(shard), {}, BUILD)
    restarted.apply_commit(1)  # the coordinator's apply reaching the new process
    restarted.close()
    assert _state(shard) == COMMITTED


def test_replaying_a_committed_transaction_changes_nothing(shard: Path, tmp_path: Path) -> None:
    worker = _staged(shard)
    kept = tmp_path / "kept.jsonl"
    shutil.copy(prepared_path(shard, 1), kept)
    worker.apply_commit(1)
    worker.close()
    shutil.copy(kept, prepared_path(shard, 1))  # died after its commit, before the removal
    restarted = ShardWorker(str(shard), {}, BUILD)
    restarted.recover(1)
    restarted.close()
    assert _state(shard) == COMMITTED


def test_an_aborted_transaction_leaves_nothing(shard: Path) -> None:
    before = _state(shard)
    worker = _staged(shard)
    worker.abort_commit(1)
    worker.commit()  # nothing staged any more
    worker.close()
    assert _state(shard) == before and prepared_files(shard) == []


def test_malformed_records_are_refused(tmp_path: Path) -> None:
    assert read_decided(tmp_path) == 0
    write_decided(tmp_path, 7)
    assert read_decided(tmp_path) == 7
    (tmp_path / "decided.json").write_text(json.dumps({"transaction": "7"}))
    with pytest.raises(IndexFormatError, match=r"decided\.json"):
        read_decided(tmp_path)
    (tmp_path / "decided.json").write_text("[1]")
    with pytest.raises(IndexFormatError, match=r"decided\.json"):
        read_decided(tmp_path)
    bad = tmp_path / "shard-000.txn-00000001.jsonl"
    bad.write_text('["upsert", []]\n["rename", []]\n')
    with pytest.raises(IndexFormatError, match="line 2"):
        read_prepared(bad)


def test_a_replica_started_during_its_writers_first_save_waits_for_a_commit(
    tmp_path: Path,
) -> None:
    """A read replica's actor may start while its writer is still writing the shard's first
    commit (the directory there, no commit point yet): it starts without an engine, where it
    used to raise (and an actor whose constructor raised is dead for good), and loads the
    commit when it is prepared."""
    from hybrid_engine.live import layout

    path = tmp_path / "shard-000"
    path.mkdir()
    (path / layout.LOCK).touch()  # what a first save writes before its commit point
    replica = ShardWorker(str(path), {}, BUILD, replica=True)
    shutil.rmtree(path)  # the writer's first save then starts over
    writer = ShardWorker(str(path), {}, BUILD)
    writer.stage([_doc("a", "alpha", 0)], False)
    replica.prepare(1, writer.commit_number(), None, None)
    assert replica.commit_number() == writer.commit_number() >= 1
    writer.close()
    replica.close()
