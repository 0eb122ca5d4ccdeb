"""Documents on their way to the shards: checked whole before any shard stages one, each with
its place in the collection's order."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from hybrid_engine.corpus import Document
from hybrid_engine.distributed.partition import SEQ_FIELD, group_by_shard
from hybrid_engine.errors import DuplicateIdError
from hybrid_engine.ids import check_id
from hybrid_engine.live.documents import LiveDocuments

if TYPE_CHECKING:
    from hybrid_engine.distributed.cluster import ShardCalls


def routed(documents: list[Any], seq: Iterator[int]) -> list[dict[str, Any]]:
    """``documents`` as the shards stage them: each a dict with a ``str`` ``"_id"`` (which
    routes it: an ``int`` is taken as its decimal string, ``ids.check_id``), its metadata
    holding ``SEQ_FIELD`` = the next of ``seq``.

    Raises
    ------
    TypeError
        A document that is not a dict, or whose ``"_id"`` is neither ``str`` nor ``int``.
    ValueError
        A document without ``"_id"``, with one that breaks the id rule, or using
        ``SEQ_FIELD``; what ``HybridIndex.add`` raises for a bad document or metadata value
        (checked here, so no shard stages a part).
    DuplicateIdError
        An id given twice.
    """
    out, seen = [], set()
    for position, doc in enumerate(documents):
        if not isinstance(doc, dict):
            raise TypeError(
                f"document {position} is {type(doc).__name__}: a sharded index takes dicts with "
                'an "_id" (it routes the document to its shard)'
            )
        doc_id = doc.get("_id")
        if doc_id is None:
            raise ValueError(f'document {position} has no "_id": a sharded index routes by id')
        doc_id = check_id(doc_id, f'document {position}\'s "_id"')
        if doc_id in seen:
            raise DuplicateIdError(f"document id {doc_id!r} is given twice; nothing was staged")
        seen.add(doc_id)
        metadata = doc.get("metadata") or {}
        if SEQ_FIELD in doc or (isinstance(metadata, dict) and SEQ_FIELD in metadata):
            raise ValueError(
                f"document {doc_id!r} uses the field {SEQ_FIELD!r}, which a sharded index keeps "
                "for itself: rename it"
            )
        if not isinstance(metadata, dict):
            raise TypeError(
                f"document {doc_id!r}'s metadata is {type(metadata).__name__}, not dict"
            )
        out.append({**doc, "_id": doc_id, "metadata": {**metadata, SEQ_FIELD: next(seq)}})
    LiveDocuments.from_documents(out)  # every document and metadata value, checked
    return out


def fill_shards(
    calls: ShardCalls, corpus: Iterable[Document] | Any, n_shards: int, size: int
) -> None:
    """Route ``corpus`` to the shards of ``calls`` in batches of ``size``: each shard's first
    batch builds it, the others are staged, and a last commit ends the build."""
    rows = corpus.iter_rows() if hasattr(corpus, "iter_rows") else corpus
    started = [False] * n_shards
    seq = itertools.count()
    for batch in batched(rows, size):
        documents = routed(batch, seq)
        groups = group_by_shard([d["_id"] for d in documents], n_shards)
        calls.each(
            "stage",
            [
                ([documents[i] for i in group], started[s]) if group else None
                for s, group in enumerate(groups)
            ],
        )
        started = [was or bool(group) for was, group in zip(started, groups, strict=True)]
    empty = [s for s, was in enumerate(started) if not was]
    if empty:
        raise ValueError(f"shards {empty} of {n_shards} got no document: build fewer shards")
    calls.all("commit")


def batched(rows: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """``rows`` in lists of at most ``size``."""
    iterator = iter(rows)
    while batch := list(itertools.islice(iterator, size)):
        yield batch
