"""Searches during commits see one committed snapshot each; one writer per index directory."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from dense_oracle import HashingEncoder
from live_oracle import QUERIES, document, new_engine

from hybrid_engine import WriterLockedError
from hybrid_engine.engine.index import HybridIndex


def _key(result) -> tuple:  # type: ignore[no-untyped-def]
    return tuple(tuple(row) for row in result.doc_ids), result.scores.tobytes()


def test_searches_during_100_commits_each_see_one_commit() -> None:
    engine = new_engine([document(i) for i in range(30)])
    committed = {_key(engine.search(QUERIES, 10))}
    seen: list[tuple] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def search() -> None:
        try:
            while not done.is_set():
                seen.append(_key(engine.search(QUERIES, 10, num_threads=1)))
        except BaseException as exc:
            errors.append(exc)

    readers = [threading.Thread(target=search) for _ in range(8)]
    for reader in readers:
        reader.start()
    try:
        for step in range(100):
            engine.add([document(100 + step)])
            engine.delete([f"d{step % 30}"], missing_ok=True)
            engine.upsert([document(30 + step % 7, version=step)])
            engine.commit()
            committed.add(_key(engine.search(QUERIES, 10)))
    finally:
        done.set()
        for reader in readers:
            reader.join()
    assert not errors
    assert seen and set(seen) <= committed


def test_a_second_writer_gets_a_clear_error(tmp_path: Path) -> None:
    engine = new_engine([document(i) for i in range(5)])
    engine.save(tmp_path / "live")
    reader = HybridIndex.load(tmp_path / "live", encoder=HashingEncoder())
    assert len(reader.search(QUERIES, 3)) == len(QUERIES)  # reading needs no lock
    with pytest.raises(WriterLockedError, match="another writer holds"):
        reader.add([document(50)])
    script = (
        "import sys; sys.path.insert(0, 'tests')\n"
        "from dense_oracle import HashingEncoder\n"
        "from hybrid_engine.engine.index import HybridIndex\n"
        f"e = HybridIndex.load({str(tmp_path / 'live')!r}, encoder=HashingEncoder())\n"
        "try:\n    e.delete(['d1'])\nexcept Exception as exc:\n    print(type(exc).__name__)\n"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "WriterLockedError"
    engine.close()
    reader.add([document(50)])  # the lock is free now
    reader.commit()
    assert len(reader) == 6


def test_a_merge_is_a_write_too(tmp_path: Path) -> None:
    engine = new_engine([document(i) for i in range(6)])
    engine.delete(["d1"])
    engine.commit()
    engine.save(tmp_path / "live")
    other = HybridIndex.load(tmp_path / "live", encoder=HashingEncoder())
    with pytest.raises(WriterLockedError):
        other.merge()  # nothing staged, but rewriting segments needs the lock
    engine.close()
    other.merge()
    assert other.num_segments == 1 and len(other) == 5


def test_a_writer_of_an_older_commit_is_refused(tmp_path: Path) -> None:
    engine = new_engine([document(i) for i in range(5)])
    engine.save(tmp_path / "live")
    stale = HybridIndex.load(tmp_path / "live", encoder=HashingEncoder())
    engine.add([document(9)])
    engine.commit()
    engine.close()
    with pytest.raises(Exception, match="moved on to commit 2"):
        stale.add([document(10)])
