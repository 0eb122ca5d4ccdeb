"""What every harness shares: the exceptions a target may raise (anything else is a finding),
the check that runs one call under that rule, and the atheris entry point."""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from hybrid_engine.errors import HybridEngineError, IndexFormatError

EXPECTED: tuple[type[BaseException], ...] = (ValueError, TypeError, HybridEngineError)
"""The documented refusals: ``ValueError`` (``IndexFormatError`` among them), ``TypeError``
and the package's own errors. ``MemoryError``, ``RecursionError``, ``IndexError``,
``KeyError``, ``OverflowError`` and numba's errors are findings."""

_T = TypeVar("_T")


class Unexpected(AssertionError):
    """A finding: a wrong exception, an error message that does not name its file, or a
    result that breaks the target's contract."""


def refused(call: Callable[[], _T], *, names: str | os.PathLike[str] | None = None) -> _T | None:
    """``call()``, or None when it raises one of ``EXPECTED``; any other exception propagates.

    With ``names``, an ``IndexFormatError`` must name that path (the index the user gave), so
    the user knows which directory to rebuild.
    """
    try:
        return call()
    except IndexFormatError as exc:
        if names is not None and str(names) not in str(exc):
            raise Unexpected(f"IndexFormatError that does not name {names}: {exc}") from exc
        return None
    except EXPECTED:
        return None


def main(one_input: Callable[[bytes], None], argv: list[str] | None = None) -> None:
    """Fuzz ``one_input`` with atheris: ``argv`` (default ``sys.argv``) are libFuzzer's flags.

    Python code of the package and of the tests is instrumented for coverage (the C++ core
    and the numba kernels are not: atheris sees their Python callers). Run with
    ``NUMBA_BOUNDSCHECK=1`` and a ``NUMBA_CACHE_DIR`` of its own (``scripts/fuzz.py`` sets
    both) so that an out-of-bounds index in a kernel is an ``IndexError`` (a finding) rather
    than a silent read.
    """
    import atheris
    import numba

    if not numba.config.BOUNDSCHECK:
        print(
            "note: NUMBA_BOUNDSCHECK is not 1; kernels run without bounds checks", file=sys.stderr
        )
    repo = Path(__file__).resolve().parents[2]
    roots = (str(repo / "hybrid_engine"), str(repo / "tests"))
    for module in list(sys.modules.values()):
        if str(getattr(module, "__file__", None)).startswith(roots):
            for value in list(vars(module).values()):
                if callable(value) and getattr(value, "__module__", None) == module.__name__:
                    _instrument(atheris, value)
    warm_up(one_input)
    atheris.Setup(sys.argv if argv is None else argv, one_input)
    atheris.Fuzz()


def warm_up(one_input: Callable[[bytes], None], count: int = 64) -> None:
    """Run ``one_input`` on ``count`` fixed pseudo-random inputs, so that the indexes a harness
    builds and the numba kernels it compiles are ready before libFuzzer's per-input timeout
    starts counting (a finding here is raised as it is)."""
    rng = random.Random(0)
    for i in range(count):
        one_input(rng.randbytes(8 * i))


def _instrument(atheris: object, value: object) -> None:
    """Instrument a function, or every plain function of a class, for coverage."""
    functions = (
        [v for v in vars(value).values() if hasattr(v, "__code__")]
        if isinstance(value, type)
        else [value]
    )
    for function in functions:
        if hasattr(function, "__code__"):
            atheris.instrument_func(function)  # type: ignore[attr-defined]
