"""Flag values checked as they are parsed (argparse ``type=``): a bad one is a one-line usage
error naming the flag, ``argument --depth: expected an integer >= 1, got 0``."""

from __future__ import annotations

import argparse
import json
import math


def positive_int(text: str) -> int:
    """An int >= 1 (``-k``, ``--depth``)."""
    return _int_from(text, 1)


def non_negative_int(text: str) -> int:
    """An int >= 0 (``--offset``)."""
    return _int_from(text, 0)


def _int_from(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an integer >= {minimum}, got {text!r}"
        ) from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
    return value


def json_object(text: str) -> dict[str, object]:
    """A JSON object (``--decay``)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r} ({exc})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {text!r}")
    return value


def field_list(text: str) -> list[str]:
    """Comma-separated metadata field names (``--facets lang,year``), at least one."""
    names = [name.strip() for name in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected FIELD[,FIELD...], got {text!r}")
    return names


def unit_float(text: str) -> float:
    """A number in [0, 1] (``--mmr``)."""
    value = _number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0 (``--budget-ms``)."""
    value = _number(text)
    if not 0.0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return value


def multiple(text: str) -> float:
    """A finite number >= 1 (``--oversample``)."""
    value = _number(text)
    if not 1.0 <= value < math.inf:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {text}")
    return value


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def parse_weights(text: str) -> dict[str, float]:
    """``--weights``'s ``LEG=W,...`` (e.g. ``bm25=1,dense=2``): finite weights >= 0, not all
    0, each leg once (that the index has each leg is checked once it is loaded)."""
    weights: dict[str, float] = {}
    for part in text.split(","):
        leg, equals, number = (piece.strip() for piece in part.partition("="))
        if not equals or not leg:
            raise argparse.ArgumentTypeError(
                f"expected LEG=WEIGHT pairs separated by commas (bm25=1,dense=2), got {part!r}"
            )
        if leg in weights:
            raise argparse.ArgumentTypeError(f"leg {leg!r} is given twice")
        weight = _number(number)
        if not 0.0 <= weight < math.inf:
            raise argparse.ArgumentTypeError(
                f"{leg}'s weight must be finite and >= 0, got {number}"
            )
        weights[leg] = weight
    if not any(weights.values()):
        raise argparse.ArgumentTypeError("the weights are all 0; give one leg a weight > 0")
    return weights
