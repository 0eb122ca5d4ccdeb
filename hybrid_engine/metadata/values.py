"""The values document metadata may hold, the codes the columns store them by, and the one
check of a single value (shared by the records and the filter operands).

A value is ``None``, a ``bool``, an ``int`` in ``[-2**53, 2**53]`` (exact in float64), a finite
``float`` or a ``str``; a document's field may also hold a list of ``str`` or a list of ``int``.
``bool`` is its own kind, never a number: ``True`` does not equal ``1`` here.
"""

from __future__ import annotations

import math

NULL, BOOL, INT, FLOAT, STR = range(5)
"""Kind code of a value (uint8 in the columns)."""
KIND_NAMES = ("null", "bool", "int", "float", "str")
"""Name of each kind code, by code."""
LIST_MARKER = "list"
"""The extra name ``MetadataColumns.kinds`` gives a field some document holds a list in."""

MISSING, SCALAR, LIST = range(3)
"""What a document holds in a field (uint8 in the columns): nothing, one value, or a list."""

MAX_EXACT_INT = 2**53
"""Ints must lie in ``[-MAX_EXACT_INT, MAX_EXACT_INT]``, where float64 holds each exactly."""

ALLOWED = "str, int, float, bool, None, or a list of str or a list of int"
"""The allowed values, as error messages name them."""


def scalar_kind(value: object, where: str) -> int:
    """The kind code of a single (non-list) value.

    Parameters
    ----------
    value : object
        The value to check.
    where : str
        What error messages name, e.g. ``"document 3, field 'year'"``.

    Raises
    ------
    TypeError
        ``value`` is none of None, bool, int, float, str (a list, a dict, bytes, a numpy int...).
    ValueError
        An int outside ``±2**53``, or a float that is NaN or infinite.
    """
    if value is None:
        return NULL
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, int):
        if not -MAX_EXACT_INT <= value <= MAX_EXACT_INT:
            raise ValueError(
                f"{where}: the int {value} lies outside ±2**53, where float64 holds every int "
                "exactly; store it as a str (or a float, if rounding is fine)"
            )
        return INT
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(
                f"{where}: {value} is not a finite float; NaN and infinities are refused "
                "(None stands for no value)"
            )
        return FLOAT
    if isinstance(value, str):
        return STR
    raise TypeError(
        f"{where}: {type(value).__name__} {_shown(value)} is not a metadata value; use {ALLOWED} "
        "(convert numpy scalars with .item())"
    )


def _shown(value: object) -> str:
    """``repr(value)``, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
