"""Every atheris harness of ``tests/fuzz`` runs for 10 s through ``scripts/fuzz.py`` without
a finding (a crash, a hang, an out-of-memory input, or a contract the harness checks)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz import HARNESSES

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("atheris", reason="the fuzz extra: pip install -e .[fuzz]")


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
            "10",
            "--out",
            str(out),
            name,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    log = (out / name / "last.log").read_text() if (out / name / "last.log").exists() else ""
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n--- harness log ---\n{log[-6000:]}"
    row = next(line for line in done.stdout.splitlines() if line.startswith(name))
    assert int(row.split()[2]) > 0, f"the harness tried no input: {row}"
