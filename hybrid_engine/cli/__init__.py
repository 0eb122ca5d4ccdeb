"""The ``hybrid-engine`` command line: one module per command, each with ``add_parser`` and
``run``; this module assembles them."""

from __future__ import annotations

import sys
from argparse import ArgumentParser
from collections.abc import Sequence

from hybrid_engine._version import __version__
from hybrid_engine.cli import demo, index, models, search, serve, train, tune
from hybrid_engine.cli import eval as evaluate
from hybrid_engine.errors import HybridEngineError
from hybrid_engine.evaluation import DatasetError

COMMANDS = (index, search, serve, evaluate, tune, train, models, demo)
"""The command modules, in the order of ``--help``."""


def build_parser() -> ArgumentParser:
    """The argument parser of ``hybrid-engine`` (exposed for docs and tests)."""
    parser = ArgumentParser(prog="hybrid-engine", description="Embedded CPU-only hybrid retrieval.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hybrid-engine`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (HybridEngineError, DatasetError, ValueError, TypeError, FileExistsError) as exc:
        print(f"hybrid-engine {args.command}: error: {exc}", file=sys.stderr)
        return 2
