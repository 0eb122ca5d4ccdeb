"""Argument checks shared by every module: ints and ``k``, thread counts, text batches (lists,
tuples or numpy arrays of str), masks of allowed documents."""

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


def check_allowed(allowed: object, n_docs: int) -> np.ndarray:
    """``allowed``, a mask of the documents a search may return, as given: a numpy bool
    array of shape ``(n_docs,)``, C-contiguous (never converted, so a stray int array or a
    strided view is an error rather than a silent copy per call).

    Raises
    ------
    TypeError
        Not a numpy array, or not of dtype bool.
    ValueError
        The wrong shape, or not C-contiguous.
    """
    if not isinstance(allowed, np.ndarray):
        raise TypeError(
            f"allowed must be a numpy bool array of shape ({n_docs},), got {type(allowed).__name__}"
        )
    if allowed.dtype != np.bool_:
        raise TypeError(
            f"allowed must have dtype bool, got {allowed.dtype}; build it as a bool mask "
            "(e.g. ids >= 0, or np.zeros(n, dtype=bool))"
        )
    if allowed.shape != (n_docs,):
        raise ValueError(
            f"allowed must have shape ({n_docs},), one entry per document, got {allowed.shape}"
        )
    if not allowed.flags.c_contiguous:
        raise ValueError(
            "allowed must be C-contiguous; pass np.ascontiguousarray(allowed) once, not a "
            "strided view"
        )
    return allowed


def check_names(spec: str, known: Sequence[str], what: str, noun: str) -> list[str]:
    """The names of a comma-separated list such as ``"bm25,dense"``, each one of ``known``.

    Raises
    ------
    ValueError
        The list is empty or names an unknown one: the message names ``what`` was given, the
        unknown ``noun`` and lists the known ones.
    """
    names = [name.strip() for name in spec.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise ValueError(
            f"{what} {spec!r}: unknown or no {noun} {unknown}; choose from {list(known)}"
        )
    return names


def check_threads(num_threads: int | None) -> int:
    """``num_threads``, or ``default_threads()`` for None; ValueError unless a positive int."""
    if num_threads is None:
        return default_threads()
    if isinstance(num_threads, bool) or not isinstance(num_threads, int) or num_threads < 1:
        raise ValueError(f"num_threads must be a positive int or None, got {num_threads!r}")
    return num_threads


def is_text_batch(queries: object) -> bool:
    """Whether ``queries`` are texts (what ``check_queries`` reads) rather than numbers: a
    ``str``, a sequence whose first item is a ``str``, or a 1-d numpy array of dtype ``str``
    (or ``object`` with a ``str`` first)."""
    if isinstance(queries, np.ndarray):
        first_is_str = queries.size > 0 and isinstance(queries.flat[0], str)
        return queries.ndim == 1 and (queries.dtype.kind == "U" or first_is_str)
    if isinstance(queries, str):
        return True
    return isinstance(queries, Sequence) and len(queries) > 0 and isinstance(queries[0], str)


def check_queries(queries: str | Sequence[str] | np.ndarray, what: str = "query") -> list[str]:
    """``queries`` as a list of ``str``, blank ones kept (each retriever gives them no hits).

    The one place text batches are read: a single ``str`` is a batch of one; a sequence of
    ``str``, or a 1-d numpy array of them (dtype ``str``, or ``object`` holding ``str``), is
    the batch.

    Raises
    ------
    TypeError
        ``queries`` is none of those (the message names the first item that is not a str).
    """
    if isinstance(queries, str):
        return [queries]
    if isinstance(queries, np.ndarray):
        if queries.ndim != 1 or queries.dtype.kind not in "UO":
            raise TypeError(
                f"a numpy array of {what} texts must be 1-d of dtype str (or object holding str), "
                f"got shape {queries.shape} and dtype {queries.dtype}"
            )
        items = queries.tolist()
    elif isinstance(queries, Sequence) and not isinstance(queries, (bytes, bytearray)):
        items = list(queries)
    else:
        raise TypeError(
            f"expected {what} texts as a str, a sequence of str or a 1-d numpy array of str, got "
            f"{type(queries).__name__}"
        )
    for position, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"{what} {position} is {type(text).__name__}, expected str")
    return items


def nonblank_rows(texts: Sequence[str]) -> np.ndarray:
    """int64 positions of the texts that are not empty or whitespace only (``str.strip``):
    the queries a retriever encodes; the blank ones get an all-padding row."""
    return np.fromiter((i for i, text in enumerate(texts) if text.strip()), np.int64)


def check_texts(texts: str | Sequence[str] | np.ndarray, what: str = "text") -> list[str]:
    """``texts`` as a list of non-blank ``str``, read as in ``check_queries``: what a model
    encodes or an index holds must have some text.

    Raises
    ------
    TypeError
        As in ``check_queries``.
    ValueError
        A text is empty or whitespace only.
    """
    checked = check_queries(texts, what)
    for position, text in enumerate(checked):
        if not text.strip():
            raise ValueError(
                f"{what} {position} is empty or whitespace only; it has no meaning to embed — "
                "drop it or give it text"
            )
    return checked
