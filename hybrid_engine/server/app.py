"""``create_app``: the FastAPI app over one live ``HybridIndex``.

Searches run in the threadpool on the engine's last commit, so they never wait for a write;
concurrent searches with the same options share engine calls (``batching``). Writes (stage,
delete, commit) take one asyncio lock in turn and run in the threadpool too, so the event
loop keeps answering. Errors the engine raises on what the client sent are 4xx with
``{"detail": "..."}``: an id already indexed 409, an unknown id (``UnknownIdError``) 404, a bad
document, filter, fusion or weight (``ValueError``, ``TypeError``) 400; a body sent without a
JSON content type is 415, one outside the schemas 422 (``guards``); a full batching queue is
503."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.security import APIKeyHeader
from prometheus_client import CONTENT_TYPE_LATEST

from hybrid_engine.distributed.cluster import ShardUnavailableError
from hybrid_engine.distributed.index import ShardedIndex
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.errors import (
    DegradedEngineError,
    DuplicateIdError,
    IndexFormatError,
    StageError,
    UnknownIdError,
)
from hybrid_engine.pipeline.facets import Facets
from hybrid_engine.server.api_docs import add_api_docs
from hybrid_engine.server.batching import BatcherFullError, BatchPolicy, Rows, SearchBatcher
from hybrid_engine.server.guards import require_json, validation_failed
from hybrid_engine.server.metrics import ServerMetrics
from hybrid_engine.server.page import add_search_page
from hybrid_engine.server.schemas import (
    CommitResponse,
    DeleteRequest,
    DocId,
    DocumentOut,
    DocumentsRequest,
    ErrorResponse,
    HealthResponse,
    HitOut,
    QueryResult,
    RollbackResponse,
    SearchRequest,
    SearchResponse,
    StagedCounts,
    StagedResponse,
    StatsResponse,
    facets_out,
    legs_out,
)
from hybrid_engine.server.stats import index_stats

API_KEY_HEADER = "X-API-Key"
"""The header that carries the API key, when the app has one."""
ERROR: dict[str, Any] = {"model": ErrorResponse, "description": "what was wrong, and the fix"}
"""The OpenAPI description of an error response."""
BATCHING = BatchPolicy()
"""The default batching policy (``BatchPolicy``'s defaults)."""


@contextmanager
def engine_errors() -> Iterator[None]:
    """The engine's errors about the request as HTTP errors: ``DuplicateIdError`` 409,
    ``UnknownIdError`` 404, ``ValueError`` and ``TypeError`` 400, a full batching
    queue, a search with no leg left (``StageError``), a write to an engine loaded without
    a leg (``DegradedEngineError``), a shard of a sharded index that did not answer where
    every shard must (``ShardUnavailableError``) or damaged index files a strict search read
    (``IndexFormatError``, a ``ValueError`` but not the client's) 503; the engine's message is
    the ``detail``."""
    try:
        yield
    except IndexFormatError as exc:
        raise HTTPException(status_code=503, detail=str(exc)) from None
    except DuplicateIdError as exc:
        raise HTTPException(status_code=409, detail=str(exc)) from None
    except UnknownIdError as exc:
        raise HTTPException(status_code=404, detail=str(exc)) from None
    except (ValueError, TypeError) as exc:
        raise HTTPException(status_code=400, detail=str(exc)) from None
    except (BatcherFullError, StageError, DegradedEngineError, ShardUnavailableError) as exc:
        raise HTTPException(status_code=503, detail=str(exc)) from None


def create_app(
    engine: HybridIndex | ShardedIndex,
    *,
    api_key: str | None = None,
    cors_origins: Sequence[str] = (),
    batching: BatchPolicy | None = BATCHING,
    page: bool = True,
) -> FastAPI:
    """The HTTP API over ``engine``.

    Parameters
    ----------
    engine : HybridIndex or ShardedIndex
        The live index served; the app stages, deletes and commits through it (commits are
        durable when it is attached to a directory, ``save``/``load``). A sharded index
        answers the same endpoints, its searches naming the shards that did not answer
        (``missing_shards``) and each shard's milliseconds (``shard_timings_ms``); the
        search options it lacks yet are a 400 naming them.
    api_key : str, optional
        When given, every endpoint but ``GET /health`` needs it in the ``X-API-Key`` header
        (401 otherwise), ``/openapi.json``, ``/docs`` and ``/redoc`` included. None: no key.
    cors_origins : sequence of str
        Origins allowed cross-origin requests (CORS); none by default.
    batching : BatchPolicy or None
        How concurrent searches share engine calls (``batching``); None: each request is
        its own engine call.
    page : bool
        Serve the search page at ``GET /`` (``page.add_search_page``: static files of the
        package, no data; its searches go through ``POST /search`` with the key the user
        types). False: no page.

    Returns
    -------
    fastapi.FastAPI
        With ``POST /search``, ``POST /documents``, ``DELETE /documents``, ``GET
        /documents/{id}``, ``POST /commit``, ``POST /rollback``, ``GET /health``, ``GET
        /stats`` and ``GET /metrics`` (Prometheus text).

    Raises
    ------
    ValueError
        ``api_key`` is empty.
    """
    if api_key is not None and not api_key:
        raise ValueError("api_key is empty: give a non-empty key, or None for no key")
    # FastAPI's own schema and docs routes would answer without the key: add_api_docs's instead.
    app = FastAPI(
        title="hybrid_engine",
        summary="Hybrid BM25 + dense retrieval over HTTP.",
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
        exception_handlers={RequestValidationError: validation_failed},
    )
    metrics = ServerMetrics()
    write_lock = asyncio.Lock()
    header = APIKeyHeader(name=API_KEY_HEADER, auto_error=False)

    def check_key(given: str | None = Depends(header)) -> None:
        if api_key is not None and not (
            given is not None and secrets.compare_digest(given.encode(), api_key.encode())
        ):
            raise HTTPException(status_code=401, detail=f"missing or wrong {API_KEY_HEADER} header")

    # Without a key the routes declare no security, so the schema says what the server does.
    keyed = [Depends(check_key)] if api_key is not None else []
    with_body = [*keyed, Depends(require_json)]  # the key's 401 first
    refused: dict[int | str, dict[str, Any]] = {401: ERROR} if api_key is not None else {}
    searched = {**refused, 400: ERROR, 415: ERROR, 503: ERROR}
    written = {**refused, 400: ERROR, 404: ERROR, 409: ERROR, 415: ERROR, 503: ERROR}
    reads = {**refused, 503: ERROR}
    add_api_docs(app, keyed)
    if page:
        add_search_page(app)
    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=[API_KEY_HEADER, "Content-Type"],
        )

    @app.middleware("http")
    async def count(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Any:
        start = time.perf_counter()
        response = await call_next(request)
        route = request.scope.get("route")
        endpoint = f"{request.method} {getattr(route, 'path', 'unmatched')}"
        metrics.observe_request(endpoint, response.status_code, time.perf_counter() - start)
        return response

    async def search(texts: list[str], options: Mapping[str, Any]) -> Rows:
        extras = ("highlight", "explain")
        searched = {name: value for name, value in options.items() if name not in extras}
        if isinstance(engine, ShardedIndex):
            sharded = await engine.asearch(texts, **searched)
            metrics.observe_stages(sharded.timings, len(texts))
            metrics.observe_shards(sharded.missing_shards, sharded.shard_timings)
            return Rows(
                sharded.hits(),
                dict(sharded.timings),
                facets=sharded.facets,
                highlights=sharded.highlights() if options.get("highlight") else None,
                legs=sharded.explain() if options.get("explain") else None,
                missing_shards=list(sharded.missing_shards),
                shard_timings=dict(sharded.shard_timings),
            )
        result = await engine.asearch(texts, **searched)
        metrics.observe_stages(result.timings, len(texts), result.degraded, result.skipped)
        return Rows(
            result.hits(),
            dict(result.timings),
            degraded=list(result.degraded),
            skipped=list(result.skipped),
            facets=result.facets,
            highlights=result.highlights() if options.get("highlight") else None,
            legs=result.explain() if options.get("explain") else None,
        )

    # Without batching every request runs at once, alone (as many as the threadpool runs).
    unbatched = BatchPolicy(max_batch=1, max_running=2**30)
    batcher = SearchBatcher(search, batching or unbatched)

    @app.post("/search", dependencies=with_body, responses=searched)
    async def post_search(body: SearchRequest) -> SearchResponse:
        """The hits of each query on the last commit (``HybridIndex.search``)."""
        texts = body.texts()
        with engine_errors():
            answer = await batcher.search(texts, body.options())
        facets: list[Facets | None] = [None] * len(texts)
        if answer.facets is not None:
            facets = list(answer.facets)
        nothing: list[list[Any]] = [[None] * len(hits) for hits in answer.hits]
        marks = answer.highlights if answer.highlights is not None else nothing
        ranks = answer.legs if answer.legs is not None else nothing
        results = [
            QueryResult(
                query=text,
                hits=[
                    HitOut(**vars(hit), highlight=mark, legs=legs_out(legs))
                    for hit, mark, legs in zip(hits, row_marks, row_ranks, strict=True)
                ],
                facets=facets_out(counts),
            )
            for text, hits, counts, row_marks, row_ranks in zip(
                texts, answer.hits, facets, marks, ranks, strict=True
            )
        ]
        shard_timings = None
        if answer.shard_timings is not None:
            shard_timings = {str(shard): ms for shard, ms in answer.shard_timings.items()}
        return SearchResponse(
            results=results,
            timings_ms=answer.timings,
            batch_size=answer.batch_size,
            degraded=answer.degraded,
            skipped=answer.skipped,
            missing_shards=answer.missing_shards,
            shard_timings_ms=shard_timings,
        )

    async def write(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        async with write_lock:
            with engine_errors():
                return await run_in_threadpool(call, *args, **kwargs)

    @app.post("/documents", dependencies=with_body, responses=written)
    async def post_documents(body: DocumentsRequest) -> StagedResponse:
        """Stage documents (``add``, or ``upsert`` with ``"upsert": true``); the reply lists
        their ids, those given to documents without ``_id`` included. A document the engine
        would refuse at commit is a 400 naming it, and nothing is staged."""
        docs = [d.to_document() for d in body.documents]
        ids = await write(engine.upsert if body.upsert else engine.add, docs)
        return StagedResponse(staged=len(ids), ids=ids)

    def delete(ids: list[str], missing_ok: bool) -> list[str]:
        # Under the write lock: no write comes between the look-up and the deletion.
        held = engine.holds(ids)
        engine.delete(ids, missing_ok=missing_ok)
        return list(dict.fromkeys(i for i, live in zip(ids, held, strict=True) if live))

    @app.delete("/documents", dependencies=with_body, responses=written)
    async def delete_documents(body: DeleteRequest) -> StagedResponse:
        """Stage the deletion of documents by id (``delete``); the reply lists the ids
        deleted (not those ``missing_ok`` skipped)."""
        ids = await write(delete, body.ids, body.missing_ok)
        return StagedResponse(staged=len(ids), ids=ids)

    @app.get(
        "/documents/{doc_id:path}",
        dependencies=keyed,
        responses={**reads, 404: ERROR},
    )
    async def get_document(doc_id: DocId) -> DocumentOut:
        """The document of the last commit with this id (``get``); staged documents are not
        seen until ``POST /commit``, as searches do not see them."""
        with engine_errors():
            found = await run_in_threadpool(engine.get, [doc_id], missing_ok=True)
        if not found:
            raise HTTPException(
                status_code=404,
                detail=f"no document has the _id {doc_id!r} in the last commit (a document "
                "staged since is visible after POST /commit)",
            )
        hit = found[0]
        return DocumentOut(_id=hit.id, title=hit.title, text=hit.text, metadata=hit.metadata)

    @app.post("/commit", dependencies=keyed, responses=written)
    async def post_commit() -> CommitResponse:
        """Make the staged changes visible to searches from now on (``commit``)."""
        await write(engine.commit)
        documents, segments, _ = await counts()
        return CommitResponse(documents=documents, segments=segments)

    @app.post("/rollback", dependencies=keyed, responses=written)
    async def post_rollback() -> RollbackResponse:
        """Drop every change staged since the last commit (``rollback``); the reply says how
        many documents to add and to delete were dropped."""
        dropped = await write(engine.rollback)
        return RollbackResponse(dropped=StagedCounts.of(dropped))

    async def counts() -> tuple[int, int, StagedCounts]:
        # Off the event loop: a sharded index asks its shards.
        def read() -> tuple[int, int, StagedCounts]:
            return len(engine), engine.num_segments, StagedCounts.of(engine.staged)

        with engine_errors():
            return await run_in_threadpool(read)

    @app.get("/health", responses={503: ERROR})
    async def get_health() -> HealthResponse:
        """The index's retrievers, live documents and segments, and the changes staged and
        not committed (no key needed)."""
        documents, segments, staged = await counts()
        return HealthResponse(
            status="ok",
            retrievers=list(engine.retrievers),
            documents=documents,
            segments=segments,
            staged=staged,
        )

    @app.get("/stats", dependencies=keyed, responses=reads)
    async def get_stats() -> StatsResponse:
        """The index: documents, segments, retrievers, staged changes, commit number, models,
        directory and bytes on disk."""
        with engine_errors():
            return await run_in_threadpool(index_stats, engine)

    @app.get(
        "/metrics",
        dependencies=keyed,
        response_class=Response,
        responses={**refused, 200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    async def get_metrics() -> Response:
        """Prometheus text: requests and latency per endpoint, search stages, documents."""
        metrics.documents.set(len(engine))
        return Response(metrics.exposition(), media_type=CONTENT_TYPE_LATEST)

    return app
