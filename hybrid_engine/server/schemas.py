"""The request and response bodies of the server, as pydantic models, with the bounds that
keep one request from taking the server over (queries, documents and ids per request, text
length). A body outside them is answered 422 naming the field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, WithJsonSchema, model_validator
from pydantic.json_schema import SkipJsonSchema

from hybrid_engine.ids import MAX_ID_CHARS, RULE, id_problem
from hybrid_engine.live import StagedChanges
from hybrid_engine.pipeline.facets import MAX_FACETS, Facets
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
"""Characters of a document's title."""
MAX_INT_ID = 2**53 - 1
"""An integer ``_id``'s magnitude, at most: the largest that every JSON parser keeps exactly
(I-JSON, RFC 7493); a larger one is sent as a string."""
MAX_BUDGET_MS = 600_000.0
"""A search's ``budget_ms``, at most (ten minutes: more is no budget)."""


MAX_EXPRESSION_CHARS = 1_000
"""Longest rescoring ``expression``."""
QueryText = Annotated[str, Field(max_length=MAX_TEXT_CHARS)]
FieldName = Annotated[str, Field(min_length=1, max_length=MAX_TITLE_CHARS)]
"""A metadata field's name (``facets``)."""
"""A query of a batch."""
QueryBatch = Annotated[list[QueryText], Field(min_length=1, max_length=MAX_QUERIES)]
"""The queries of one request."""
Weight = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
"""A retriever's fusion weight."""


def as_id(value: Any) -> str:
    """``value`` as an id (``hybrid_engine.ids``' rule): a string as it is, an integer (up to
    ``MAX_INT_ID`` in magnitude) as its decimal string.

    Raises
    ------
    ValueError
        What is wrong, in the rule's words (pydantic answers it as a 422 naming the field).
    """
    problem = id_problem(value)
    if problem is not None:
        raise ValueError(f"the id {problem[1]}; {RULE}")
    if isinstance(value, int) and abs(value) > MAX_INT_ID:
        raise ValueError(
            f"the integer id {value:.3g} is beyond +-{MAX_INT_ID}, which not every JSON parser "
            "keeps exactly; send it as a string"
        )
    return str(value)


ID_SCHEMA = {
    "anyOf": [
        {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS},
        {"type": "integer", "minimum": -MAX_INT_ID, "maximum": MAX_INT_ID},
    ]
}
"""The JSON schema of an id."""
DocId = Annotated[str, PlainValidator(as_id), WithJsonSchema(ID_SCHEMA)]
"""A document id as JSON gives it: a string (1 to ``MAX_ID_CHARS`` characters, without
surrounding whitespace or control characters) or an integer (taken as its decimal string:
``1408`` and ``"1408"`` are the same document); ``true``, ``""`` or ``" x"`` is a 422 naming
the field."""
OptionalDocId = Annotated[str | None, PlainValidator(as_id), WithJsonSchema(ID_SCHEMA)]
"""A ``DocId`` that may be left out (None); ``null`` is refused as ``DocId`` refuses it."""


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
    offset: int | None = Field(default=None, ge=0, le=MAX_K)
    min_score: float | None = Field(default=None, ge=0.0, le=1.0)
    facets: list[FieldName] | None = Field(default=None, min_length=1, max_length=MAX_FACETS)
    highlight: bool | None = None
    explain: bool | None = None
    decay: dict[str, Any] | None = None
    expression: str | None = Field(default=None, min_length=1, max_length=MAX_EXPRESSION_CHARS)
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


class LegRank(BaseModel):
    """A hit's place in one leg's own ranking: its 1-based rank and its score there."""

    rank: int
    score: float


def legs_out(ranks: Mapping[str, tuple[int, float]] | None) -> dict[str, LegRank] | None:
    """One hit's ``HybridResult.explain`` entry as the response's."""
    if ranks is None:
        return None
    return {leg: LegRank(rank=rank, score=score) for leg, (rank, score) in ranks.items()}


class HitOut(BaseModel):
    """One hit: the document's id, its score in the result, title, text and metadata; when
    the request asked for ``highlight`` (else absent), its snippet with the query's matching
    words in ``<mark>`` (HTML-escaped, ``HybridResult.highlights``); when it asked to
    ``explain`` (else absent), its rank and score in each leg that returned it
    (``HybridResult.explain``)."""

    id: str
    score: float
    title: str
    text: str
    metadata: dict[str, Any]
    highlight: str | None = Field(default=None, exclude_if=lambda value: value is None)
    legs: dict[str, LegRank] | None = Field(default=None, exclude_if=lambda value: value is None)


class FacetCount(BaseModel):
    """How many of the documents a search matched hold one value of a field."""

    value: str | int | float | bool | None
    count: int


class QueryResult(BaseModel):
    """One query's hits, best first, and, when ``facets`` were asked (else absent), each
    field's value counts over the documents it matched, most frequent first
    (``HybridResult.facets``)."""

    query: str
    hits: list[HitOut]
    facets: dict[str, list[FacetCount]] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )


def facets_out(counts: Facets | None) -> dict[str, list[FacetCount]] | None:
    """One query's ``HybridResult.facets`` entry as the response's."""
    if counts is None:
        return None
    return {
        name: [FacetCount(value=value, count=n) for value, n in pairs]
        for name, pairs in counts.items()
    }


class SearchResponse(BaseModel):
    """The hits of each query, in the request's order; the milliseconds of each stage of the
    engine search that answered them (``HybridResult.timings``), how many queries that search
    answered (more than the request's when concurrent requests were batched), and the stages
    it left out: ``degraded``, those that failed (``HybridResult.degraded``), and ``skipped``,
    those that would have overrun ``budget_ms`` (``HybridResult.skipped``). Served from a
    sharded index (else absent): ``missing_shards``, the shards that did not answer (the hits
    are the others'), and ``shard_timings_ms``, each answering shard's own milliseconds."""

    results: list[QueryResult]
    timings_ms: dict[str, float]
    batch_size: int
    degraded: list[str] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    missing_shards: list[int] | None = Field(default=None, exclude_if=lambda value: value is None)
    shard_timings_ms: dict[str, float] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )


class DocumentIn(BaseModel):
    """A document as ``HybridIndex.add`` reads it; without ``_id`` the engine gives it a new
    random id (a UUID4, ``hybrid_engine.ids.new_id``), which the reply lists."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, strict=True)

    id: OptionalDocId = Field(default=None, alias="_id")
    title: str = Field(default="", max_length=MAX_TITLE_CHARS)
    text: str = Field(default="", max_length=MAX_TEXT_CHARS)
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

    ids: list[DocId] = Field(min_length=1, max_length=MAX_IDS)
    missing_ok: bool = False


class StagedResponse(BaseModel):
    """What a write staged: how many documents, and their ids in order (for ``POST
    /documents`` those the engine gave documents without ``_id`` included; for ``DELETE
    /documents`` the ids deleted, without those ``missing_ok`` skipped). ``POST /commit``
    makes them visible, ``POST /rollback`` drops them."""

    staged: int
    ids: list[str]


class StagedCounts(BaseModel):
    """Changes staged and not committed (``HybridIndex.staged``): documents to add and
    committed documents to delete (those an upsert replaces included)."""

    added: int
    deleted: int

    @classmethod
    def of(cls, changes: StagedChanges) -> StagedCounts:
        """The counts of ``HybridIndex.staged`` or ``rollback()``."""
        return cls(added=changes.added, deleted=changes.deleted)


class RollbackResponse(BaseModel):
    """What ``POST /rollback`` dropped."""

    dropped: StagedCounts


class DocumentOut(BaseModel):
    """A document of the last commit, as ``POST /documents`` takes it."""

    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    id: str = Field(alias="_id")
    title: str
    text: str
    metadata: dict[str, Any]


class CommitResponse(BaseModel):
    """The index after a commit."""

    documents: int
    segments: int


class HealthResponse(BaseModel):
    """The retrievers the index combines, its live documents and segments (last commit), and
    the changes staged since."""

    status: str
    retrievers: list[str]
    documents: int
    segments: int
    staged: StagedCounts


class StatsResponse(BaseModel):
    """The index served: its live documents, segments and retrievers (last commit), the
    changes staged since, the commit's number (``generation``), the prepared model of each
    model leg and the reranker (``{"name", "variant"}``; None for an encoder of the user's),
    its directory (None: in memory only) and the bytes of its files there."""

    documents: int
    segments: int
    retrievers: list[str]
    staged: StagedCounts
    generation: int
    models: dict[str, dict[str, str] | None]
    path: str | None
    disk_bytes: int | None


class ErrorResponse(BaseModel):
    """A refused request (4xx, or 503 when overloaded): what was wrong and how to fix it."""

    detail: str
