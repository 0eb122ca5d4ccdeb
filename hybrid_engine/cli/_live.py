"""What ``add`` and ``delete`` share: the index argument, ``-`` for stdin, and the one line
they print."""

from __future__ import annotations

import argparse

from hybrid_engine.pipeline.engine import HybridIndex

STDIN = "-"
"""The file argument that reads standard input (``add``'s ``FILE``, ``delete --ids-file``)."""


def add_index_arguments(parser: argparse.ArgumentParser) -> None:
    """``INDEX`` and ``--threads``."""
    parser.add_argument("index", help="live index directory (`hybrid-engine index` or save)")
    parser.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")


def summary(done: str, engine: HybridIndex) -> str:
    """``"<done> -> INDEX: N documents in S segment(s)"``, after the commit."""
    return f"{done} -> {engine.path}: {len(engine)} documents in {engine.num_segments} segment(s)"
