"""Run the atheris harnesses of ``tests/fuzz`` one after another, each in its own process for
a bounded time, and print a table: harness, CPU-seconds, inputs tried, crashes/hangs.

Usage (from the repository root)::

    python scripts/fuzz.py --seconds 60                 # every harness, 60 s each
    python scripts/fuzz.py --seconds 300 analyzer filters --out /tmp/fuzz

Each harness runs as ``python -m tests.fuzz.<name> CORPUS -max_total_time=N`` with
``NUMBA_BOUNDSCHECK=1`` (a kernel's out-of-bounds index is an error, not a silent read) and a
numba cache of its own. Its corpus (the inputs that found new coverage, kept between runs)
and any crash, timeout or out-of-memory input are written under ``--out``, per harness; replay
one with ``python -m tests.fuzz.<name> FILE``. The exit status is 1 when any harness found
something.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.fuzz import HARNESSES  # noqa: E402

_RUNS = re.compile(r"Done (\d+) runs in")
_FOUND = ("crash-", "timeout-", "oom-", "leak-")
"""Prefixes of libFuzzer's files of the inputs that found something (not its slow units)."""
_FINDINGS = {
    "exception": "Uncaught Python exception",
    "crash": "deadly signal",
    "timeout": "ERROR: libFuzzer: timeout",
    "out-of-memory": "ERROR: libFuzzer: out-of-memory",
}
"""What libFuzzer's log says for each kind of finding."""


def run(name: str, seconds: int, out: Path, extra: list[str]) -> dict[str, object]:
    """Fuzz harness ``name`` for ``seconds``; its figures and what it found."""
    corpus, artifacts = out / name / "corpus", out / name / "artifacts"
    corpus.mkdir(parents=True, exist_ok=True)
    artifacts.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "NUMBA_BOUNDSCHECK": "1",
        "NUMBA_CACHE_DIR": str(out / "numba-cache"),
        "PYTHONPATH": str(ROOT),
    }
    command = [
        sys.executable,
        "-m",
        f"tests.fuzz.{name}",
        str(corpus),
        f"-max_total_time={seconds}",
        "-timeout=60",
        "-rss_limit_mb=3072",
        f"-artifact_prefix={artifacts}/",
        "-print_final_stats=1",
        *extra,
    ]
    earlier = set(artifacts.iterdir())
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = done.stdout + done.stderr
    (out / name / "last.log").write_text(log)
    runs = _RUNS.search(log)
    found = [kind for kind, said in _FINDINGS.items() if said in log]
    if done.returncode != 0 and not found:
        found = [f"exit status {done.returncode}"]
    return {
        "harness": name,
        "cpu_s": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "inputs": int(runs.group(1)) if runs else _last_count(log),
        "found": ", ".join(found) or "none",
        "artifacts": sorted(
            str(p) for p in set(artifacts.iterdir()) - earlier if p.name.startswith(_FOUND)
        ),
    }


def _last_count(log: str) -> int:
    """Inputs tried from libFuzzer's last status line, when it stopped without "Done"."""
    counts = re.findall(r"^#(\d+)\s", log, flags=re.MULTILINE)
    return int(counts[-1]) if counts else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help=f"harnesses to run (default all): {', '.join(HARNESSES)}",
    )
    parser.add_argument("--seconds", type=int, default=60, help="time per harness (default 60)")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="corpora, crash inputs and logs (default: a temporary folder)",
    )
    parser.add_argument("--libfuzzer", default="", help="extra libFuzzer flags, space-separated")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.targets) - set(HARNESSES))
    if unknown:
        parser.error(f"unknown harnesses {unknown}; choose from {', '.join(HARNESSES)}")
    out = args.out or Path(tempfile.mkdtemp(prefix="hybrid-engine-fuzz-"))
    rows = [
        run(name, args.seconds, out, args.libfuzzer.split()) for name in args.targets or HARNESSES
    ]
    print(f"{'harness':<14} {'CPU-s':>8} {'inputs':>10}  crashes/hangs")
    for row in rows:
        print(f"{row['harness']:<14} {row['cpu_s']:>8.1f} {row['inputs']:>10}  {row['found']}")
        for artifact in row["artifacts"]:  # type: ignore[attr-defined]
            print(f"    {artifact}")
    print(f"corpora, logs and findings: {out}")
    return 1 if any(row["found"] != "none" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
