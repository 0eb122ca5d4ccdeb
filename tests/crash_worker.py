"""The child of tests/test_live_crash.py: mutates a live index until it is killed, journaling
each commit. The forkserver imports this module before it forks any child, so the import
warms the engine up (one build, commit and merge in a scratch directory): every child starts
with the numba kernels compiled, as a fork of a running service would, and reaches its
commits within the test's kill delays."""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path

from dense_oracle import HashingEncoder
from live_oracle import document, live_documents, new_engine

from hybrid_engine.pipeline.engine import HybridIndex


def journal_record(path: Path, record: dict) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
        f.flush()
        os.fsync(f.fileno())


def mutate_forever(index: Path, journal: Path, seed: int) -> None:
    """Mutate ``index`` forever (until killed), journaling each commit's live ids."""
    rng = random.Random(seed)
    engine = HybridIndex.load(index, encoder=HashingEncoder())
    live = {d["_id"] for d in live_documents(engine)}
    counter = seed * 100_000
    while True:
        for _ in range(rng.randint(1, 3)):
            action = rng.random()
            if action < 0.5 or not live:
                batch = [document(counter + j) for j in range(rng.randint(1, 6))]
                counter += len(batch)
                engine.add(batch)
                live |= {d["_id"] for d in batch}
            elif action < 0.8:
                gone = rng.sample(sorted(live), min(len(live), rng.randint(1, 4)))
                engine.delete(gone)
                live -= set(gone)
            else:
                doc_id = rng.choice(sorted(live))
                engine.upsert([{**document(int(doc_id[1:]), version=1), "_id": doc_id}])
        journal_record(journal, {"pending": sorted(live)})
        if rng.random() < 0.15:
            engine.merge(num_threads=1)
        else:
            engine.commit(num_threads=1)
        journal_record(journal, {"done": sorted(live)})


def _warm_up() -> None:
    """Build, save, load, add, delete, commit and merge once, in a scratch directory."""
    with tempfile.TemporaryDirectory() as scratch:
        engine = new_engine([document(i) for i in range(8)])
        engine.save(Path(scratch) / "warm")
        engine.close()
        engine = HybridIndex.load(Path(scratch) / "warm", encoder=HashingEncoder())
        engine.add([document(100 + i) for i in range(3)])
        engine.delete(["d1"])
        engine.commit(num_threads=1)
        engine.merge(num_threads=1)
        engine.search(["warm up"], k=3)
        engine.close()


_warm_up()
