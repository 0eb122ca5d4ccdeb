"""The sharded index's checks (``tests/sharded_checks.py``) in a pytest process of their own.

Ray loads its ``_raylet`` library with ``RTLD_GLOBAL``, and the symbols it exports then break
llama.cpp loaded later in the same process: ``test_generation`` segfaulted in its second
generation once any module had imported Ray. So the main test process never imports Ray;
this child does, and its failures are this test's (a skip there is a failure under CI too).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_sharded_index_checks_pass_in_their_own_process() -> None:
    checks = Path(__file__).with_name("sharded_checks.py")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", str(checks), "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=1500,
        cwd=Path(__file__).parents[1],
    )
    assert run.returncode == 0, run.stdout[-20_000:] + run.stderr[-5_000:]
    assert " passed" in run.stdout and " skipped" not in run.stdout, run.stdout[-5_000:]
