"""Running ``hybrid-engine`` as a user does: a separate process (``python -m hybrid_engine``),
with this checkout first on its path and the embedding cache of the test session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def cli_env() -> dict[str, str]:
    """The environment of a command: this one, with the checkout first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def cli(*argv: str | Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``hybrid-engine ARGV...`` run to its end (text output; ``stdin`` fed to it)."""
    return subprocess.run(
        [sys.executable, "-m", "hybrid_engine", *map(str, argv)],
        input=stdin,
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=600,
    )


def ok(*argv: str | Path, stdin: str | None = None) -> str:
    """The standard output of a command that must succeed."""
    done = cli(*argv, stdin=stdin)
    assert done.returncode == 0, done.stderr
    return done.stdout


def error_line(*argv: str | Path, stdin: str | None = None) -> str:
    """The one line a failing command printed, without its ``hybrid-engine CMD: error: ``:
    status 2, nothing on standard output, no traceback."""
    done = cli(*argv, stdin=stdin)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    prefix = f"hybrid-engine {argv[0]}: error: "
    assert lines[0].startswith(prefix), lines[0]
    return lines[0][len(prefix) :]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]
