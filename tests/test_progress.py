"""Quiet work makes no tqdm bar: building and committing without ``show_progress`` leaves
tqdm's process-shared lock uncreated (a process killed inside it would hang every process
forked from the same parent), and ``show=True`` still draws a bar."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hybrid_engine.progress import progress_bar

QUIET_WORK = """
import tqdm.std
from dense_oracle import HashingEncoder
from hybrid_engine import HybridIndex
docs = [{"_id": f"d{i}", "text": f"cat {i} sat"} for i in range(20)]
engine = HybridIndex.build(docs, retrievers=["bm25", "dense"], encoder=HashingEncoder())
engine.add([{"_id": "x", "text": "a dog"}])
engine.commit()
engine.search(["cat"], k=3)
made = [c.__name__ for c in (tqdm.std.tqdm, *tqdm.std.tqdm.__subclasses__()) if "_lock" in vars(c)]
print(made)
"""


def test_quiet_build_and_commit_make_no_tqdm() -> None:
    tests = Path(__file__).parent
    out = subprocess.run(
        [sys.executable, "-c", QUIET_WORK],
        cwd=tests.parent,
        env={"PYTHONPATH": f"{tests}:{tests.parent}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert out.stdout.strip() == "[]", out.stderr


def test_a_shown_bar_counts(capsys: pytest.CaptureFixture[str]) -> None:
    with progress_bar(total=3, desc="work", unit="doc", show=True) as bar:
        bar.update(2)
        bar.update(1)
    assert "work: 100%" in capsys.readouterr().err
