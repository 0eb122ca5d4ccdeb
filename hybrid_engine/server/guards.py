"""What the server checks of a request before its schema, and how it answers a body outside
the schema: a body sent without a JSON content type is a 415 saying so, and a 422 echoes at
most ``MAX_ECHO_CHARS`` of each value it refuses and at most ``MAX_ERRORS`` errors, so a
1 MB query is not sent back."""

from __future__ import annotations

import json
from typing import Any

from fastapi import HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

MAX_ECHO_CHARS = 200
"""Characters of a refused value (pydantic's ``input``) that a 422 echoes, at most."""
MAX_ERRORS = 20
"""Errors a 422 lists, at most (the last entry then says how many were left out)."""


def is_json(content_type: str) -> bool:
    """Whether a ``Content-Type`` header names JSON: ``application/json`` or
    ``application/*+json``, parameters (``; charset=utf-8``) aside."""
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


async def require_json(request: Request) -> None:
    """A dependency of the endpoints with a body: a body sent without a JSON content type is
    refused (415), instead of FastAPI's 422 about a body that "should be a valid dictionary"
    (``curl -d`` sends ``application/x-www-form-urlencoded``)."""
    given = request.headers.get("content-type")
    if (given is None or not is_json(given)) and await request.body():
        sent = f"'{given}'" if given else "no Content-Type"
        raise HTTPException(
            status_code=415,
            detail=f"the body must be JSON sent as 'Content-Type: application/json', got {sent} "
            "(with curl: -H 'Content-Type: application/json')",
        )


def bounded_error(error: dict[str, Any]) -> dict[str, Any]:
    """A pydantic error (JSON-ready) whose ``input``, when longer than ``MAX_ECHO_CHARS``
    (as JSON, or as a string), is cut to that many characters and a note of its length."""
    if "input" not in error:
        return error
    value = error["input"]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= MAX_ECHO_CHARS:
        return error
    what = "characters" if isinstance(value, str) else "characters of JSON"
    return {**error, "input": f"{text[:MAX_ECHO_CHARS]}... ({len(text)} {what}, cut)"}


async def validation_failed(request: Request, exc: RequestValidationError) -> JSONResponse:
    """The 422 of a request outside the schema: FastAPI's ``{"detail": [errors]}`` (each
    with ``loc``, ``msg``, ``type``, ``input``), bounded by ``MAX_ERRORS`` and
    ``MAX_ECHO_CHARS``."""
    errors = [bounded_error(e) for e in jsonable_encoder(exc.errors())]
    shown = errors[:MAX_ERRORS]
    if len(errors) > MAX_ERRORS:
        left = len(errors) - MAX_ERRORS
        shown.append(
            {"type": "too_many_errors", "loc": ["body"], "msg": f"{left} more errors not shown"}
        )
    return JSONResponse(status_code=422, content={"detail": shown})
