"""The rules of tests/conftest.py hold: under CI a skipped test fails (a missing data folder or
model is a failure there, not a skip), and no test writes to the user's ``~/.cache``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from hybrid_engine import EmbeddingCache

CONFTEST = Path(__file__).with_name("conftest.py")
SKIPPING = """
import pytest

def test_needs_the_shared_data(shared_data):
    pass

def test_needs_an_extra():
    pytest.importorskip("a_module_that_is_not_installed")
"""
SKIPPED_MODULE = """
import pytest

pytest.importorskip("another_module_that_is_not_installed")


def test_never_collected():
    pass
"""


def run_suite(tmp_path: Path, ci: bool, tests: str = SKIPPING) -> subprocess.CompletedProcess[str]:
    """The test module ``tests`` under this conftest, without the shared data folder."""
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_skips.py").write_text(tests)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["HYBRID_ENGINE_DATA"] = str(tmp_path / "absent")
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_skips_fail_under_ci(tmp_path: Path) -> None:
    done = run_suite(tmp_path, ci=True)
    assert done.returncode == 1, done.stdout
    # The fixture's skip fails the set-up (an error), the test body's skip the call.
    assert "1 failed, 1 error" in done.stdout
    assert "skipped under CI" in done.stdout and "absent" in done.stdout


def test_a_module_skipped_while_collected_fails_under_ci(tmp_path: Path) -> None:
    done = run_suite(tmp_path, ci=True, tests=SKIPPED_MODULE)
    assert done.returncode != 0, done.stdout
    assert "skipped while collected under CI" in done.stdout
    assert "another_module_that_is_not_installed" in done.stdout
    assert "1 skipped" in run_suite(tmp_path, ci=False, tests=SKIPPED_MODULE).stdout


def test_skips_stay_skips_elsewhere(tmp_path: Path) -> None:
    done = run_suite(tmp_path, ci=False)
    assert done.returncode == 0, done.stdout
    assert "2 skipped" in done.stdout


def test_embeddings_are_not_cached_in_the_home_folder() -> None:
    root = EmbeddingCache().root.resolve()
    assert not root.is_relative_to(Path.home().resolve() / ".cache"), root
