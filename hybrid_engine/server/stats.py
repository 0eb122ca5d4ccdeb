"""``GET /stats``: what the served index holds, which models it runs, where it lives and how
much room it takes there."""

from __future__ import annotations

from hybrid_engine.distributed.index import ShardedIndex
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.server.schemas import StagedCounts, StatsResponse
from hybrid_engine.storage.usage import disk_bytes


def index_stats(engine: HybridIndex | ShardedIndex) -> StatsResponse:
    """The ``GET /stats`` answer for ``engine`` (walks its directory: run it off the event
    loop); of a sharded index, its segments over every shard and the coordinated commit's
    number, its directory holding every shard's."""
    models: dict[str, dict[str, str] | None] = dict(engine.models)
    reranker = engine.reranker
    if reranker is not None:
        models["reranker"] = {"name": reranker.name, "variant": reranker.variant}
    path = engine.path
    return StatsResponse(
        documents=len(engine),
        segments=engine.num_segments,
        retrievers=list(engine.retrievers),
        staged=StagedCounts.of(engine.staged),
        generation=engine.generation,
        models=models,
        path=None if path is None else str(path),
        disk_bytes=None if path is None else disk_bytes(path),
    )
