"""The ``hybrid-engine`` command line: one module per command, each with ``add_parser`` and
``run``; this module assembles them."""

from __future__ import annotations

import sys
import traceback
from argparse import ArgumentParser
from collections.abc import Sequence

from hybrid_engine._version import __version__
from hybrid_engine.cli import (
    add,
    delete,
    demo,
    index,
    models,
    pick,
    search,
    serve,
    train,
    train_encoder,
    tune,
)
from hybrid_engine.cli import eval as evaluate
from hybrid_engine.cli._errors import USER_ERRORS, error_message, is_user_error

COMMANDS = (
    index,
    add,
    delete,
    search,
    serve,
    evaluate,
    pick,
    tune,
    train,
    train_encoder,
    models,
    demo,
)
"""The command modules, in the order of ``--help``."""


def build_parser() -> ArgumentParser:
    """The argument parser of ``hybrid-engine`` (exposed for docs and tests)."""
    parser = ArgumentParser(prog="hybrid-engine", description="Embedded CPU-only hybrid retrieval.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--debug",
        action="store_true",
        help="on an error, print its full traceback instead of one line (exit status 2 still)",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hybrid-engine`` console script; returns the exit status.

    An error the user caused (``_errors.is_user_error``: a bad argument, file or index, an
    unknown id, a locked index) prints one line, ``hybrid-engine CMD: error: ...``, or its
    traceback with ``--debug``, and returns 2. Any other exception is a bug and propagates.
    """
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except USER_ERRORS as exc:
        if not is_user_error(exc):
            raise
        if args.debug:
            traceback.print_exc()
        else:
            print(f"hybrid-engine {args.command}: error: {error_message(exc)}", file=sys.stderr)
        return 2
