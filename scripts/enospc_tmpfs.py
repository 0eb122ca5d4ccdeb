"""Saves, live commits and merges, and cache writes on a really full disk: a small tmpfs.

For each operation of tests/test_crash_faults.py (its workspaces, checks and next operations)
and each amount of free space, from none up to what the operation needs: fill the tmpfs to
leave that much, run the operation, then check what it raised and that what is on disk
reopens whole (and, after the next operation, that nothing temporary is left). Needs root
(``mount -t tmpfs``); the fault-injection tests inject ENOSPC instead.

    python scripts/enospc_tmpfs.py [--size-mib 64]
"""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_crash_faults import OPERATIONS, TARGETS

_FREE_STEPS = [0, 4096, 16384] + [65536 * 2**i for i in range(8)]
"""Bytes left free before each run (tmpfs counts whole 4 KiB pages)."""


def fill(mount: Path, free: int) -> Path:
    """A file that leaves about ``free`` bytes of ``mount`` free."""
    filler = mount / "filler"
    stats = os.statvfs(mount)
    size = max(stats.f_bavail * stats.f_frsize - free, 0)
    with open(filler, "wb") as f:
        f.truncate(0)
        chunk = b"\0" * (1 << 20)
        written = 0
        try:
            while written < size:
                written += f.write(chunk[: min(len(chunk), size - written)])
                f.flush()
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    return filler


def run(name: str, mount: Path, template: Path, args: tuple, free: int) -> str:
    """One run on a copy of ``template`` with ``free`` bytes free: its outcome, in words."""
    work = mount / "work"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(template, work)
    args = tuple(work / Path(a).relative_to(template) if isinstance(a, Path) else a for a in args)
    filler = fill(mount, free)
    finished, outcome = False, "finished"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            OPERATIONS[name](*args)
        finished = not caught
        if caught:
            outcome = f"warned: {caught[0].message}"
    except OSError as exc:
        named = str(work) in str(exc)
        outcome = f"raised errno {exc.errno} ({'names the path' if named else 'NO PATH'}): {exc}"
    finally:
        filler.unlink()
    target = TARGETS[name]
    target.check(work, finished)
    target.recover(work)
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=64)
    options = parser.parse_args()
    templates = Path(tempfile.mkdtemp(prefix="enospc-templates-"))
    mount = Path(tempfile.mkdtemp(prefix="enospc-tmpfs-"))
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={options.size_mib}m", "tmpfs", str(mount)],
        check=True,
    )
    try:
        for name, target in TARGETS.items():
            template = templates / name.replace(" ", "-")
            template.mkdir()
            args = target.prepare(template)
            for free in _FREE_STEPS:
                outcome = run(name, mount, template, args, free)
                print(f"{name:20s} free {free:>8d} B: {outcome}"[:220], flush=True)
                if outcome == "finished":
                    break
    finally:
        subprocess.run(["umount", str(mount)], check=True)
        mount.rmdir()
        shutil.rmtree(templates)


if __name__ == "__main__":
    main()
