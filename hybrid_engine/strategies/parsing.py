"""Robust readings of a small model's output: lines, numbering, junk, repeats, nothing at all."""

from __future__ import annotations

import json
import re
from typing import Any

_NUMBERING = re.compile(
    r"^\s*(?:(?:(?:\d+|[a-z])[.):]|[-*\u2022]|(?:sub-?)?quer(?:y|ies)\s*\d*:)\s*)+", re.I
)
_LABEL = re.compile(r"^(?:passage|answer)\s*:\s*", re.I)
_LETTER = re.compile(r"[^\W\d_]")
_NEXT_TURN = re.compile(r"\n\s*(?:question|answer|passage|search queries|filter)\s*:", re.I)


def clean_lines(text: str, limit: int | None = None) -> list[str]:
    """The distinct non-junk lines of ``text``: numbering, bullets and quotes stripped,
    lines without a letter dropped, repeats (case-insensitive) dropped, at most ``limit``.

    Reading stops at the next prompt-like turn (``Question:``, ``Answer:``...), which a base
    model writes when it goes on past its answer.
    """
    text = _NEXT_TURN.split("\n" + text, maxsplit=1)[0]
    seen: set[str] = set()
    out: list[str] = []
    for line in text.splitlines():
        line = _NUMBERING.sub("", line).strip().strip("\"'`").strip()
        key = " ".join(line.lower().split())
        if not _LETTER.search(line) or key in seen:
            continue
        seen.add(key)
        out.append(line)
        if limit is not None and len(out) == limit:
            break
    return out


def passage(text: str, max_chars: int = 1500) -> str:
    """The text up to the next prompt-like turn, a leading ``Passage:``/``Answer:`` label
    dropped, whitespace collapsed, at most ``max_chars``; ``""`` when it holds no letter."""
    body = _LABEL.sub("", text.strip())
    body = " ".join(_NEXT_TURN.split(body, maxsplit=1)[0].split())[:max_chars]
    return body if _LETTER.search(body) else ""


def follow_up(text: str, stop: str) -> str | None:
    """The follow-up query of a multi-hop answer, or None when the model wrote ``stop``
    (first word, any case), or nothing readable."""
    lines = clean_lines(text, limit=1)
    if not lines:
        return None
    first = re.sub(r"[^\w]", "", lines[0].split()[0]).lower()
    return None if first == stop.lower() else lines[0]


def json_object(text: str) -> dict[str, Any]:
    """The first balanced ``{...}`` of ``text`` read as a JSON object.

    Raises
    ------
    ValueError
        No ``{``, unbalanced braces, or text that is not JSON (the message says which).
    """
    start = text.find("{")
    if start < 0:
        raise ValueError("the output holds no JSON object (no '{')")
    depth, quoted, escaped = 0, False, False
    for end in range(start, len(text)):
        char = text[end]
        if quoted:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                quoted = False
            continue
        if char == '"':
            quoted = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                try:
                    value = json.loads(text[start : end + 1])
                except json.JSONDecodeError as error:
                    raise ValueError(f"malformed JSON: {error}") from None
                if not isinstance(value, dict):  # pragma: no cover - a {...} is an object
                    raise ValueError("the JSON is not an object")
                return value
    raise ValueError("malformed JSON: unbalanced braces")
