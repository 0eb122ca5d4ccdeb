"""Every atheris harness of ``tests/fuzz`` tries ``RUNS`` inputs (``LIVE_RUNS`` for
``load_live``) through ``scripts/fuzz.py`` without a finding (a crash, a hang, an
out-of-memory input, or a contract the harness checks).

The inputs are the same on every run (libFuzzer's ``-seed``, a fixed ``PYTHONHASHSEED``, a
count of inputs rather than a time), so that a finding here is one anyone can replay and not
the luck of a fast machine; longer campaigns with fresh seeds are ``scripts/fuzz.py``'s
(docs/hardening.md, "Fuzzing")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import atheris  # noqa: F401  (the fuzz extra, in dev: a missing one fails, never skips)
import pytest

from tests.fuzz import HARNESSES

ROOT = Path(__file__).resolve().parents[1]
RUNS = 3000
"""Inputs per harness: 4 to 46 s each on 2 cores (but ``load_live``'s)."""
LIVE_RUNS = 500
"""``load_live``'s inputs (each saves and reopens a live index: 3,000 took 268 s)."""


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for every harness, so that they share the numba cache."""
    return tmp_path_factory.mktemp("fuzz")


@pytest.mark.slow
@pytest.mark.parametrize("name", HARNESSES)
def test_harness_runs_without_findings(name: str, out: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "fuzz.py"),
            "--seconds",
            "300",
            "--libfuzzer",
            f"-seed=1 -runs={LIVE_RUNS if name == 'load_live' else RUNS}",
            "--out",
            str(out),
            name,
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    log = (out / name / "last.log").read_text() if (out / name / "last.log").exists() else ""
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n--- harness log ---\n{log[-6000:]}"
    row = next(line for line in done.stdout.splitlines() if line.startswith(name))
    assert int(row.split()[2]) > 0, f"the harness tried no input: {row}"
