"""The coordinator process of tests/test_sharded_crash.py, on a running Ray cluster.

    python sharded_crash_child.py ADDRESS ROOT WORK MODE SEED TXNS

MODE ``build`` builds the sharded index at ROOT (two shards, BM25) and exits. Otherwise it
opens the sharded index at ROOT (which finishes or rolls back what a killed coordinator
left), writes every shard's live documents as they are then to ``WORK/observed.json``, and
commits transactions ``last decided + 1`` on, each appended to ``WORK/acked`` (fsynced)
once ``commit`` returned, ``TXNS`` of them, then exits 0. MODE kills at one step of the first
transaction (``die_*``: this process, as kill -9 would, whose shard actors Ray then stops;
``shard_*``: a shard's actor, which Ray restarts at its last commit, and the commit goes on
or is staged again), or ``random`` (the test kills this process whenever it likes).
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
from pathlib import Path
from typing import Any

import ray

from hybrid_engine import HybridIndex
from hybrid_engine.distributed import ShardedIndex, ShardUnavailableError
from hybrid_engine.distributed import writes as writes_module
from hybrid_engine.distributed.manifest import shard_dir
from hybrid_engine.distributed.transactions import read_decided

N_SHARDS = 2
BASE = 10
"""Documents ``b-0`` .. ``b-9`` the index is built with (version 0)."""
BUILD = {"retrievers": ["bm25"]}


def changes(txn: int) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]:
    """Transaction ``txn``'s additions, deletions and upserts (what ``expected`` undoes)."""
    added = [{"_id": f"t{txn}-{i}", "text": f"txn {txn} doc {i}"} for i in range(6)]
    deleted = [f"t{txn - 2}-{i}" for i in (0, 2, 4)] if txn > 2 else []
    upserted = [{"_id": f"b-{txn % BASE}", "text": f"base {txn % BASE} version {txn}"}]
    return added, deleted, upserted


def expected(txn: int) -> dict[str, str]:
    """Every live document's text once transactions 1 .. ``txn`` are committed."""
    docs = {f"b-{i}": f"base {i} version 0" for i in range(BASE)}
    for t in range(1, txn + 1):
        added, deleted, upserted = changes(t)
        docs.update((d["_id"], d["text"]) for d in added + upserted)
        for doc_id in deleted:
            docs.pop(doc_id, None)
    return docs


def observed(root: Path) -> dict[str, str]:
    """Every live document's text over the shards' last commits, read from disk."""
    out: dict[str, str] = {}
    for shard in range(N_SHARDS):
        engine = HybridIndex.load(shard_dir(root, shard))
        ids = list(engine.doc_ids)
        live = [doc_id for doc_id, held in zip(ids, engine.holds(ids), strict=True) if held]
        out.update((hit.id, hit.text) for hit in engine.get(live))
        engine.close()
    return out


def acknowledged(work: Path) -> int:
    """The last transaction a ``commit`` returned for (0: none)."""
    text = (work / "acked").read_text() if (work / "acked").exists() else ""
    return max([0, *(int(line) for line in text.split())])


def acknowledge(work: Path, txn: int) -> None:
    with open(work / "acked", "a", encoding="ascii") as f:
        f.write(f"{txn}\n")
        f.flush()
        os.fsync(f.fileno())


def die() -> None:
    os._exit(137)  # no cleanup, as kill -9


def kill_shard(index: ShardedIndex, shard: int = 1) -> None:
    ray.kill(index.actors[shard][0], no_restart=False)  # Ray restarts it at its last commit


def arm(mode: str, index: ShardedIndex) -> None:
    """Make the next commit die (or kill a shard) at the step ``mode`` names, once."""
    decide = writes_module.write_decided
    publish = writes_module.ShardWrites.publish

    def write_decided(root: Path, txn: int) -> None:
        writes_module.write_decided = decide  # once
        if mode == "die_after_prepare":
            die()
        if mode == "shard_after_prepare":
            kill_shard(index)
        decide(root, txn)
        if mode == "die_after_decide":
            die()
        if mode == "shard_after_decide":
            kill_shard(index)

    def publish_then(self: writes_module.ShardWrites) -> None:
        if mode == "die_after_apply":
            die()
        publish(self)

    writes_module.write_decided = write_decided  # type: ignore[assignment]
    if mode == "die_after_apply":
        writes_module.ShardWrites.publish = publish_then  # type: ignore[method-assign]


def stage(index: ShardedIndex, txn: int) -> None:
    added, deleted, upserted = changes(txn)
    index.add(added)
    if deleted:
        index.delete(deleted, missing_ok=True)
    index.upsert(upserted)


def main(address: str, root: Path, work: Path, mode: str, seed: int, txns: int) -> int:
    ray.init(address=address, log_to_driver=False)
    if mode == "build":
        docs = [{"_id": f"b-{i}", "text": f"base {i} version 0"} for i in range(BASE)]
        ShardedIndex.build(docs, root, n_shards=N_SHARDS, build_options=BUILD).close()
        return 0
    index = ShardedIndex.open(root)
    seen = {"decided": read_decided(root), "documents": observed(root)}
    (work / "observed.json").write_text(json.dumps(seen))
    if mode == "shard_random":
        rng = random.Random(seed)
        delay = rng.uniform(0.0, 3.0)
        threading.Timer(delay, kill_shard, (index, rng.randrange(N_SHARDS))).start()
    first = read_decided(root) + 1  # a transaction decided but not acknowledged is done
    if mode not in ("random", "shard_random"):
        arm(mode, index)
    for txn in range(first, first + txns):
        armed = txn == first
        while True:
            try:
                stage(index, txn)
                if armed and mode == "die_before_prepare":
                    die()
                if armed and mode == "shard_before_prepare":
                    kill_shard(index)
                armed = False
                index.commit()
                break
            except ShardUnavailableError:  # staged changes dropped, or applied later
                index.wait_ready()
                if read_decided(root) >= txn:  # it raised after its decision: committed
                    break
        acknowledge(work, txn)
    index.close()
    return 0


if __name__ == "__main__":
    address, root, work, mode, seed, txns = sys.argv[1:]
    raise SystemExit(main(address, Path(root), Path(work), mode, int(seed), int(txns)))
