"""The ``hybrid-engine`` command line: one module per command, each with ``add_parser`` and
``run``; this module assembles them."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from argparse import ArgumentParser
from collections.abc import Sequence
from typing import NoReturn

from hybrid_engine._version import __version__
from hybrid_engine.cli import (
    add,
    delete,
    demo,
    get,
    index,
    info,
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
    get,
    info,
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
DEBUG_HELP = "on an error, print its full traceback instead of one line (exit status 2 still)"
BROKEN_PIPE_STATUS = 141
"""The exit status when the reader of standard output went away (``search ... | head -1``):
128 + SIGPIPE, what the shell reports for a command a closed pipe stopped (``seq 9 | head
-1`` under ``set -o pipefail``)."""


class _Parser(ArgumentParser):
    """An ``ArgumentParser`` whose usage errors (an unknown flag, a bad value) are one line,
    as every other error is: ``hybrid-engine CMD: error: argument --depth: ...``, status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> ArgumentParser:
    """The argument parser of ``hybrid-engine`` (exposed for docs and tests).

    ``--debug`` is taken before or after the command: each command's parser has it too, with
    no default of its own, so one given before the command is not reset after it.
    """
    parser = _Parser(prog="hybrid-engine", description="Embedded CPU-only hybrid retrieval.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(subparsers)
    for command_parser in subparsers.choices.values():
        command_parser.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hybrid-engine`` console script; returns the exit status.

    An error the user caused (``_errors.is_user_error``: a bad argument, file or index, an
    unknown id, a locked index) prints one line, ``hybrid-engine CMD: error: ...``, or its
    traceback with ``--debug``, and returns 2. Any other exception is a bug and propagates.
    When the reader of standard output goes away (a pipe closed early, ``| head -1``), the
    command stops quietly and returns ``BROKEN_PIPE_STATUS``.
    """
    args = build_parser().parse_args(argv)
    try:
        status = int(args.func(args))
        sys.stdout.flush()  # here, not at exit: a closed pipe is reported now
        return status
    except BrokenPipeError:
        _silence_stdout()
        return BROKEN_PIPE_STATUS
    except USER_ERRORS as exc:
        if not is_user_error(exc):
            raise
        if args.debug:
            traceback.print_exc()
        else:
            print(f"hybrid-engine {args.command}: error: {error_message(exc)}", file=sys.stderr)
        return 2


def _silence_stdout() -> None:
    """Point standard output at the null device, so that Python's flush at exit finds no
    closed pipe to complain about (the recipe of Python's ``signal`` documentation)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
