"""The one rule for a document's ``_id``, at every door (the Python API, the CLI's files and
arguments, the server's JSON), and the ids the engine gives documents that have none.

An id is a ``str`` of 1 to ``MAX_ID_CHARS`` characters, without leading or trailing whitespace
and without control characters, so that every id can be given on a command line, written on a
line of an ids file and put in a URL path. An ``int`` (not a ``bool``) is taken as its decimal
string, as Elasticsearch and Meilisearch take numeric ids: ``1408`` and ``"1408"`` are the same
document. Anything else (``True``, ``1.5``, ``None``, a list) is refused.

A document without ``_id`` gets ``new_id()``: a random UUID (version 4), as the LangChain
adapter and Elasticsearch's automatic ids do, so a generated id never collides with one a user
chose (a counter's ``"1408"`` would).
"""

from __future__ import annotations

import unicodedata
import uuid
from typing import Any

MAX_ID_CHARS = 512
"""Characters of an id, at most (Elasticsearch's limit is 512 bytes)."""
RULE = (
    f"an id is a string of 1 to {MAX_ID_CHARS} characters without surrounding whitespace or "
    "control characters, or an integer"
)
"""The rule, as error messages state it."""


def new_id() -> str:
    """A fresh id for a document given without one: a random UUID4 in its 36-character text
    form (``"9f1c2b1e-..."``)."""
    return str(uuid.uuid4())


def id_problem(value: Any) -> tuple[type[Exception], str] | None:
    """Why ``value`` is not a valid id: the error to raise (``TypeError`` for a wrong type,
    ``ValueError`` for a bad string) and a phrase such as ``"is empty"``; None when it is one
    (``check_id``'s rule, an ``int`` included)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return TypeError, f"is {type(value).__name__} ({value!r:.40}), not a string or an integer"
    if isinstance(value, int):
        if len(str(value)) > MAX_ID_CHARS:
            return ValueError, f"is an integer of more than {MAX_ID_CHARS} digits"
        return None
    if not value:
        return ValueError, "is empty"
    if len(value) > MAX_ID_CHARS:
        return ValueError, f"has {len(value)} characters, more than {MAX_ID_CHARS}"
    if value != value.strip():
        return ValueError, f"{value!r:.60} has leading or trailing whitespace"
    if any(unicodedata.category(c) == "Cc" for c in value):
        return ValueError, f"{value!r:.60} holds a control character (a newline, a tab...)"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return ValueError, f"{value!r:.60} is not valid Unicode (a lone surrogate)"
    return None


def check_id(value: Any, where: str = "an id") -> str:
    """``value`` as an id: a valid ``str`` as it is, an ``int`` as its decimal string.

    Parameters
    ----------
    value : Any
        What the caller gave as an id.
    where : str
        What the message names, e.g. ``"document 3's '_id'"``.

    Raises
    ------
    TypeError
        ``value`` is neither ``str`` nor ``int`` (a ``bool`` is refused).
    ValueError
        An empty string, one longer than ``MAX_ID_CHARS``, one with leading or trailing
        whitespace or with a control character.
    """
    problem = id_problem(value)
    if problem is not None:
        error, phrase = problem
        raise error(f"{where} {phrase}; {RULE}")
    return str(value)


def check_ids(ids: Any, what: str = "ids") -> list[str]:
    """``ids`` (an iterable of ids, not a single one) checked by ``check_id``, in order.

    Raises
    ------
    TypeError
        ``ids`` is a single ``str`` or ``int`` (wrap it in a list), or an id is of a wrong
        type.
    ValueError
        An id breaks the rule (``check_id``; the message gives its position).
    """
    if isinstance(ids, (str, int)):
        raise TypeError(f"{what} must be a list of ids, got the single id {ids!r}; use [{ids!r}]")
    return [check_id(doc_id, f"{what}[{i}]") for i, doc_id in enumerate(ids)]
