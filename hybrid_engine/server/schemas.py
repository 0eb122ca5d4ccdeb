"""The request and response bodies of the server, as pydantic models, with the bounds that
keep one request from taking the server over (queries, documents and ids per request, text
length). A body outside them is answered 422 naming the field."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import SkipJsonSchema

from hybrid_engine.pipeline.fusion import METHODS

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
MAX_BUDGET_MS = 600_000.0
"""A search's ``budget_ms``, at most (ten minutes: more is no budget)."""


QueryText = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
"""A query of a batch."""
QueryBatch = Annotated[list[QueryText], Field(min_length=1, max_length=MAX_QUERIES)]
"""The queries of one request."""
Weight = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
"""A retriever's fusion weight."""


class SearchRequest(BaseModel):
    """``POST /search``: one ``query`` or a batch of ``queries`` (exactly one of them), and
    ``HybridIndex.search``'s options (None: the engine's default)."""

    model_config = ConfigDict(
        extra="forbid",
        strict=True,  # no coercion: false is not 0.0, "5" is not 5 (as the schema says)
        json_schema_extra={"oneOf": [{"required": ["query"]}, {"required": ["queries"]}]},
    )

    # Not nullable in the schema: "exactly one of" is its oneOf of the two.
    # The bounds sit on the non-null types: on the union, pydantic would apply them to null.
    query: QueryText | SkipJsonSchema[None] = None
    queries: QueryBatch | SkipJsonSchema[None] = None
    k: int = Field(default=10, ge=1, le=MAX_K)
    filter: dict[str, Any] | None = None
    rerank: int | None = Field(default=None, ge=1, le=MAX_K)
    mmr: float | None = Field(default=None, ge=0.0, le=1.0)
    fusion: Literal[METHODS] | None = None  # type: ignore[valid-type]
    weights: dict[str, Weight] | None = Field(default=None, max_length=16)
    depth: int | None = Field(default=None, ge=1, le=MAX_K)
    budget_ms: float | None = Field(default=None, gt=0, le=MAX_BUDGET_MS)
    strict: bool | None = None

    @model_validator(mode="after")
    def _one_of_query_and_queries(self) -> SearchRequest:
        if (self.query is None) == (self.queries is None):
            raise ValueError("give exactly one of 'query' (a text) and 'queries' (a list)")
        return self

    def texts(self) -> list[str]:
        """The query texts, a single ``query`` as a batch of one."""
        return [self.query] if self.query is not None else list(self.queries or [])

    def options(self) -> dict[str, Any]:
        """``HybridIndex.search``'s keyword arguments: ``k`` and the options given."""
        given = self.model_dump(exclude={"query", "queries"}, exclude_none=True)
        return {"k": self.k, **given}


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
    """The hits of each query, in the request's order; the milliseconds of each stage of the
    engine search that answered them (``HybridResult.timings``), how many queries that search
    answered (more than the request's when concurrent requests were batched), and the stages
    it left out: ``degraded``, those that failed (``HybridResult.degraded``), and ``skipped``,
    those that would have overrun ``budget_ms`` (``HybridResult.skipped``)."""

    results: list[QueryResult]
    timings_ms: dict[str, float]
    batch_size: int
    degraded: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)


class DocumentIn(BaseModel):
    """A document as ``HybridIndex.add`` reads it; without ``_id`` it gets the next number."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

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

    model_config = ConfigDict(extra="forbid", strict=True)

    documents: list[DocumentIn] = Field(min_length=1, max_length=MAX_DOCUMENTS)
    upsert: bool = False


class DeleteRequest(BaseModel):
    """``DELETE /documents``: ids to delete; ``missing_ok`` skips ids not in the index
    (otherwise they are refused, 404, and nothing is staged)."""

    model_config = ConfigDict(extra="forbid", strict=True)

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


class ErrorResponse(BaseModel):
    """A refused request (4xx, or 503 when overloaded): what was wrong and how to fix it."""

    detail: str
