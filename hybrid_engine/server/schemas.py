"""The request and response bodies of the server, as pydantic models, with the bounds that
keep one request from taking the server over (queries, documents and ids per request, text
length). A body outside them is answered 422 naming the field."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

MAX_QUERIES = 64
"""Queries per ``POST /search``."""
MAX_K = 1000
"""Hits per query, at most."""
MAX_DOCUMENTS = 1000
"""Documents per ``POST /documents``."""
MAX_IDS = 10_000
"""Ids per ``DELETE /documents``."""
MAX_TEXT_CHARS = 100_000
"""Characters of a document's text, or of a query."""
MAX_TITLE_CHARS = 1_000
"""Characters of a document's title or id."""


class SearchRequest(BaseModel):
    """``POST /search``: one ``query`` or a batch of ``queries`` (exactly one of them), and
    ``HybridIndex.search``'s options (None: the engine's default)."""

    model_config = ConfigDict(extra="forbid")

    query: str | None = Field(default=None, max_length=MAX_TEXT_CHARS)
    queries: list[str] | None = Field(default=None, min_length=1, max_length=MAX_QUERIES)
    k: int = Field(default=10, ge=1, le=MAX_K)
    filter: dict[str, Any] | None = None
    rerank: int | None = Field(default=None, ge=1, le=MAX_K)
    mmr: float | None = Field(default=None, ge=0.0, le=1.0)
    fusion: str | None = None

    @model_validator(mode="after")
    def _one_of_query_and_queries(self) -> SearchRequest:
        if (self.query is None) == (self.queries is None):
            raise ValueError("give exactly one of 'query' (a text) and 'queries' (a list)")
        if self.queries is not None:
            for i, text in enumerate(self.queries):
                if len(text) > MAX_TEXT_CHARS:
                    raise ValueError(f"queries[{i}] is longer than {MAX_TEXT_CHARS} characters")
        return self

    def texts(self) -> list[str]:
        """The query texts, a single ``query`` as a batch of one."""
        return [self.query] if self.query is not None else list(self.queries or [])


class HitOut(BaseModel):
    """One hit: the document's id, its score in the result, title, text and metadata."""

    id: str
    score: float
    title: str
    text: str
    metadata: dict[str, Any]


class QueryResult(BaseModel):
    """One query's hits, best first."""

    query: str
    hits: list[HitOut]


class SearchResponse(BaseModel):
    """The hits of each query, in the request's order, and the milliseconds of each stage of
    the one engine search that answered the batch (``HybridResult.timings``)."""

    results: list[QueryResult]
    timings_ms: dict[str, float]


class DocumentIn(BaseModel):
    """A document as ``HybridIndex.add`` reads it; without ``_id`` it gets the next number."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str | None = Field(default=None, alias="_id", min_length=1, max_length=MAX_TITLE_CHARS)
    title: str = Field(default="", max_length=MAX_TITLE_CHARS)
    text: str = Field(max_length=MAX_TEXT_CHARS)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def to_document(self) -> dict[str, Any]:
        """The engine's document dict."""
        doc: dict[str, Any] = {"title": self.title, "text": self.text, "metadata": self.metadata}
        if self.id is not None:
            doc["_id"] = self.id
        return doc


class DocumentsRequest(BaseModel):
    """``POST /documents``: documents to stage; ``upsert`` replaces those already indexed
    (otherwise an id already in the index is refused). ``POST /commit`` makes them visible."""

    model_config = ConfigDict(extra="forbid")

    documents: list[DocumentIn] = Field(min_length=1, max_length=MAX_DOCUMENTS)
    upsert: bool = False


class DeleteRequest(BaseModel):
    """``DELETE /documents``: ids to delete; ``missing_ok`` skips ids not in the index
    (otherwise they are refused, 404, and nothing is staged)."""

    model_config = ConfigDict(extra="forbid")

    ids: list[str] = Field(min_length=1, max_length=MAX_IDS)
    missing_ok: bool = False


class StagedResponse(BaseModel):
    """How many documents a write staged; ``POST /commit`` makes them visible."""

    staged: int


class CommitResponse(BaseModel):
    """The index after a commit."""

    documents: int
    segments: int


class HealthResponse(BaseModel):
    """The retrievers the index combines, its live documents and segments (last commit)."""

    status: str
    retrievers: list[str]
    documents: int
    segments: int
