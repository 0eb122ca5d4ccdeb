"""What the memory measurements of ``benchmarks/reports/`` share: this process's resident
memory from /proc, and a measurement run in a fresh process (so one mode's memory never counts
for the next)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

LOAD_MODES: dict[str, dict[str, bool]] = {
    "mmap": {"mmap": True},
    "mmap+verify": {"mmap": True, "verify": True},
    "in memory": {"mmap": False},
}
"""The load keywords of each mode the mmap reports compare (``load(**LOAD_MODES[mode])``)."""


def memory() -> dict[str, float]:
    """This process's ``VmRSS``, its file-backed and anonymous parts (``RssFile``,
    ``RssAnon``) and its peak so far (``VmHWM``), MiB."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssFile", "RssAnon", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


def in_fresh_process(args: list[str]) -> dict[str, Any]:
    """Run ``python ARGS`` and return the JSON object its last line of output prints."""
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])
