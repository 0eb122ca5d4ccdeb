"""The API's own description, ``GET /openapi.json``, and its pages, ``GET /docs`` (Swagger
UI) and ``GET /redoc``, behind the same dependencies as the API (its key, when it has one)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse

OPENAPI_URL = "/openapi.json"
"""Where the OpenAPI schema is served."""


def add_api_docs(app: FastAPI, dependencies: Sequence[Any]) -> None:
    """Serve ``app``'s OpenAPI schema and its two pages behind ``dependencies``; ``app`` must
    be made with ``openapi_url=None, docs_url=None, redoc_url=None`` (FastAPI's own would
    answer without them). The pages load the schema from the browser, which sends no API
    key: with one, fetch ``/openapi.json`` with the header instead."""

    @app.get(OPENAPI_URL, dependencies=list(dependencies), include_in_schema=False)
    async def openapi() -> JSONResponse:
        return JSONResponse(app.openapi())

    @app.get("/docs", dependencies=list(dependencies), include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=OPENAPI_URL, title=f"{app.title} - Swagger UI")

    @app.get("/redoc", dependencies=list(dependencies), include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url=OPENAPI_URL, title=f"{app.title} - ReDoc")
