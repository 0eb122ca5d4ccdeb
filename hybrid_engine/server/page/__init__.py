"""The search page served at ``/``: a query box, filters, fusion and rerank switches, hits
with highlights and each hit's rank and score in every leg, per-stage timings and facet
counts whose values narrow the next search.

Static files of the package (``static/``: ``index.html``, ``page.js``, ``page.css``): no
build step, no CDN, no data in them. The page searches through ``POST /search`` like any
client, sending the API key the user types (in the ``X-API-Key`` header), so a server with a
key answers it nothing without the key.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

FILES = Path(__file__).resolve().parent / "static"
"""The page's files (and nothing else: ``/page/`` serves this folder)."""


def add_search_page(app: FastAPI) -> None:
    """Serve the page at ``GET /`` and its script and style under ``/page/``."""

    @app.get("/", include_in_schema=False)
    async def search_page() -> FileResponse:
        return FileResponse(FILES / "index.html", media_type="text/html")

    app.mount("/page", StaticFiles(directory=FILES), name="page")
