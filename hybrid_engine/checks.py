"""Argument checks shared by every module: ints and ``k``, thread counts, text batches."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hybrid_engine._threads import default_threads


def check_int(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    """``value`` as an ``int`` in ``[minimum, maximum]``; ValueError otherwise (bools too).

    numpy integers are accepted; the message names the argument, the bounds and the value.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, np.integer))
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        bounds = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ValueError(f"{name} must be an int {bounds}, got {value!r}")
    return int(value)


def check_k(k: object) -> int:
    """The number of hits per query, an int >= 1."""
    return check_int("k", k, 1)


def check_threads(num_threads: int | None) -> int:
    """``num_threads``, or ``default_threads()`` for None; ValueError unless a positive int."""
    if num_threads is None:
        return default_threads()
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be a positive int or None, got {num_threads!r}")
    return num_threads


def check_texts(texts: str | Sequence[str], what: str = "text") -> list[str]:
    """``texts`` as a list of non-blank ``str`` (a single ``str`` is a batch of one).

    Raises
    ------
    TypeError
        ``texts`` is not a str or a sequence of str (the message names the first bad item).
    ValueError
        A text is empty or whitespace only.
    """
    if isinstance(texts, str):
        return [texts]
    if not isinstance(texts, Sequence) or isinstance(texts, (bytes, bytearray)):
        raise TypeError(f"expected a str or a sequence of str, got {type(texts).__name__}")
    checked = list(texts)
    for position, text in enumerate(checked):
        if not isinstance(text, str):
            raise TypeError(f"{what} {position} is {type(text).__name__}, expected str")
        if not text.strip():
            raise ValueError(
                f"{what} {position} is empty or whitespace only; it has no meaning to embed — "
                "drop it or give it text"
            )
    return checked
