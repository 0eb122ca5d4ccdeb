"""An HTTP server over a live ``HybridIndex`` (the ``serve`` extra: FastAPI, uvicorn,
prometheus-client): search, add/upsert/delete/get documents, commit or roll back, health,
stats and metrics. ``hybrid-engine serve INDEX`` runs it."""

from hybrid_engine.server.app import create_app
from hybrid_engine.server.schemas import (
    MAX_DOCUMENTS,
    MAX_IDS,
    MAX_QUERIES,
    MAX_TEXT_CHARS,
    DeleteRequest,
    DocumentsRequest,
    SearchRequest,
    SearchResponse,
)

__all__ = [
    "MAX_DOCUMENTS",
    "MAX_IDS",
    "MAX_QUERIES",
    "MAX_TEXT_CHARS",
    "DeleteRequest",
    "DocumentsRequest",
    "SearchRequest",
    "SearchResponse",
    "create_app",
]
