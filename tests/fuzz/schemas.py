"""Fuzz the HTTP request schema: arbitrary bytes, and fuzzed JSON near the real bodies, as the
body of every request model of ``hybrid_engine.server.schemas``.

Contract checked: a body is accepted or refused with a pydantic ``ValidationError``, never
another exception (which the server would answer 500); what is accepted goes on to the
engine's own checks (``Filter.compile`` of a search's filter, ``MetadataColumns`` of the
documents' metadata, the texts through the analyzer), which refuse with ``ValueError`` or
``TypeError`` only (answered 422).
"""

from __future__ import annotations

import json
import sys
from typing import Any

import atheris
from pydantic import BaseModel, ValidationError

from hybrid_engine import Analyzer
from hybrid_engine.metadata import Filter, MetadataColumns
from hybrid_engine.server.schemas import DeleteRequest, DocumentsRequest, SearchRequest
from tests.fuzz._harness import Unexpected, main, refused

MODELS: tuple[type[BaseModel], ...] = (SearchRequest, DocumentsRequest, DeleteRequest)
KEYS = (
    "query",
    "queries",
    "k",
    "filter",
    "rerank",
    "mmr",
    "fusion",
    "weights",
    "depth",
    "budget_ms",
    "strict",
    "documents",
    "upsert",
    "ids",
    "missing_ok",
    "_id",
    "id",
    "title",
    "text",
    "metadata",
    "$and",
    "$not",
    "a",
    "extra",
)
LEAVES: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    1,
    -1,
    10,
    1000,
    1001,
    2**53 + 1,
    10**400,
    0.5,
    1e308,
    -0.0,
    "",
    "x",
    "rrf",
    "bm25",
    "\ud800",
    "\x00",
    "😀",
    "1",
)
ANALYZER = Analyzer()


def value(fdp: atheris.FuzzedDataProvider, depth: int) -> Any:
    pick = fdp.ConsumeIntInRange(0, 7)
    if pick == 0 and depth < 8:
        return [value(fdp, depth + 1) for _ in range(fdp.ConsumeIntInRange(0, 3))]
    if pick == 1 and depth < 8:
        return {
            fdp.PickValueInList(list(KEYS)): value(fdp, depth + 1)
            for _ in range(fdp.ConsumeIntInRange(0, 4))
        }
    if pick == 2:
        return fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 20))
    if pick == 3:
        return fdp.ConsumeFloat()
    return fdp.PickValueInList(list(LEAVES))


def body_of(fdp: atheris.FuzzedDataProvider) -> bytes:
    """Raw bytes, or JSON text of a fuzzed object (NaN, huge numbers, lone surrogates)."""
    pick = fdp.ConsumeIntInRange(0, 5)
    if pick == 0:
        return fdp.ConsumeBytes(fdp.remaining_bytes())
    body = (
        value(fdp, 0)
        if pick == 1
        else {
            fdp.PickValueInList(list(KEYS)): value(fdp, 1)
            for _ in range(fdp.ConsumeIntInRange(0, 6))
        }
    )
    if pick == 2:  # a filter nested deeper than Python's json (or the engine) recurses
        depth = fdp.ConsumeIntInRange(0, 3000)
        return (
            '{"query": "a", "filter": ' + '{"$not": ' * depth + "{}" + "}" * depth + "}"
        ).encode()
    text = json.dumps(body, ensure_ascii=fdp.ConsumeBool())
    return text.encode("utf-8", "surrogatepass")


def downstream(request: BaseModel) -> None:
    """The engine checks an accepted body meets next."""
    if isinstance(request, SearchRequest):
        for text in request.texts():
            refused(lambda text=text: ANALYZER.analyze(text))
        if request.filter is not None:
            refused(lambda: Filter.compile(request.filter))  # type: ignore[arg-type]
        request.options()
    elif isinstance(request, DocumentsRequest):
        refused(lambda: MetadataColumns.from_records([d.metadata for d in request.documents]))
        for document in request.documents:
            refused(lambda d=document: ANALYZER.analyze(d.title + " " + d.text))
            document.to_document()


def one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    model = fdp.PickValueInList(list(MODELS))
    body = body_of(fdp)
    try:
        request = model.model_validate_json(body)
    except ValidationError:
        return
    except Exception as exc:
        raise Unexpected(
            f"{model.__name__} raised {type(exc).__name__} for {body[:200]!r}"
        ) from exc
    downstream(request)
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):  # the json module's limits, not the server's
        return
    try:  # a body accepted as JSON text is accepted as the parsed object too
        model.model_validate(parsed)
    except ValidationError:
        pass


if __name__ == "__main__":
    main(one_input, sys.argv)
