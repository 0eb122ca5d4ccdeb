"""``ShardedIndex``: a hybrid index partitioned by document id over live shards held by Ray
actors, searched as one index.

Every search fans out once: each shard returns its top ``width`` of every leg, BM25 scored
with the whole collection's statistics; the coordinator merges each leg's lists by score (ties
by the collection's order), fuses the merged lists, and reranks and diversifies the fused
candidates once. So its results are those of one ``HybridIndex`` over the same documents
(exactly where the dense legs search exactly), whatever the shard count.
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.checks import check_int, nonblank_rows
from hybrid_engine.corpus import Document
from hybrid_engine.distributed.cluster import (
    ShardCalls,
    ShardUnavailableError,
    start_shards,
    stop_shards,
)
from hybrid_engine.distributed.documents import fill_shards
from hybrid_engine.distributed.manifest import VERSION, ShardedLayout
from hybrid_engine.distributed.partition import group_by_shard
from hybrid_engine.distributed.result import ShardedResult
from hybrid_engine.distributed.search import SearchedShards, ShardedSearch
from hybrid_engine.distributed.transactions import read_decided
from hybrid_engine.distributed.worker import document_hit
from hybrid_engine.distributed.writes import ShardWrites
from hybrid_engine.engine.asynchronous import AsyncEngine
from hybrid_engine.engine.search import Searchable
from hybrid_engine.ids import check_ids
from hybrid_engine.lexical.analysis import Analyzer, AnalyzerConfig
from hybrid_engine.live.pending import StagedChanges
from hybrid_engine.live.snapshot import found_hits
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.models.splade import SpladeEncoder
from hybrid_engine.pipeline.facets import Facets
from hybrid_engine.pipeline.plan import SearchPlan
from hybrid_engine.pipeline.rerank import RerankerVerdict, reranker_verdict
from hybrid_engine.result import PAD_ID, Hit, SearchResult


class ShardedIndex(Searchable[ShardedResult], AsyncEngine[ShardedResult]):
    """A hybrid index over ``n_shards`` live shards, each a ``HybridIndex`` in its own
    directory held by a Ray actor. Build with ``build``, reopen with ``open``.

    Thread-safe: searches may run from many threads while one thread writes; each search runs
    on one coordinated commit of every shard.
    """

    def __init__(
        self,
        root: Path,
        layout: ShardedLayout,
        replicas: list[list[Any]],
        *,
        reranker: CrossEncoder | None,
        timeout_s: float | None,
    ) -> None:
        """Private: use ``build`` or ``open``."""
        self._root = root
        self._layout = layout
        self._replicas = replicas
        self._calls = ShardCalls([actors[0] for actors in replicas], None)
        # What a coordinator that died mid-commit left: decided transactions applied,
        # undecided ones rolled back (``transactions``).
        self._calls.all("recover", read_decided(root))
        if layout.version != VERSION:
            replace(layout, version=VERSION).write(root)
        described = self._calls.all("describe")
        self._retrievers: tuple[str, ...] = tuple(described[0]["retrievers"])
        self._models: dict[str, dict[str, str] | None] = dict(described[0]["models"])
        self._analyzer = Analyzer(AnalyzerConfig.from_dict(described[0]["analyzer"]))
        self._verdict: RerankerVerdict | None = None
        if reranker is not None:
            self._verdict = reranker_verdict(reranker.name, reranker.training)
        readers = [
            ShardCalls([actors[rank] for actors in replicas], None)
            for rank in range(1, len(replicas[0]))
        ]
        self._writes = ShardWrites(self._calls, described, readers, root)
        self._shards = SearchedShards(
            replicas,
            timeout_s,
            self._writes.prepared,
            self._retrievers,
            _query_model(Encoder, described[0]["dense"]),
            _query_model(SpladeEncoder, described[0]["splade"]),
            reranker,
        )

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        corpus: Iterable[Document] | Any,
        path: str | Path,
        *,
        n_shards: int = 2,
        build_options: Mapping[str, Any] | None = None,
        load_options: Mapping[str, Any] | None = None,
        actor_options: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        batch_size: int = 2_000,
        replicas: int = 1,
        reranker: CrossEncoder | None = None,
        timeout_s: float | None = None,
    ) -> ShardedIndex:
        """Partition ``corpus`` by a hash of each id into ``n_shards`` shards and build them in
        parallel, each on its actor (which encodes its documents).

        Parameters
        ----------
        corpus : iterable of dict, or ray.data.Dataset
            Documents as ``HybridIndex.build`` reads them, each with a ``str`` ``"_id"``
            (it routes the document); a Ray Dataset is read row by row.
        path : path-like
            A directory that does not exist yet: ``sharded.json`` and ``shard-NNN/`` go there.
        n_shards : int
            Shards, >= 1; each must receive at least one document.
        build_options : dict, optional
            ``HybridIndex.build`` keywords for every shard (JSON values: ``retrievers``,
            ``bm25_options``, ``dense_options``, ``splade``...); models load in the actors.
            A BM25 ``analyzer`` may be an ``AnalyzerConfig`` or the dict of its settings
            (``{"stemmer": "spanish"}``).
        load_options : dict, optional
            ``HybridIndex.load`` keywords an actor reopens its shard with after a restart.
        actor_options : dict or sequence of dict, optional
            ``ray.remote(...).options`` of every actor, or one per shard (placement:
            ``num_cpus``, ``resources``, ``scheduling_strategy``); ``cluster.start_shard``
            gives the defaults.
        batch_size : int
            Documents per call to a shard while building.
        replicas : int
            Actors per shard, >= 1: the first writes, the others are read replicas of its
            directory (so every actor must see the directory: one machine, or a shared
            file system). Searches take turns over them, and a replica that does not answer
            hands its shard to the next.
        reranker : CrossEncoder, optional
            Runs on the coordinator over the merged candidates (``search(rerank=...)``).
        timeout_s : float, optional
            Seconds to wait for a shard's answer before counting it missing; None: no limit.

        Raises
        ------
        ValueError
            ``path`` exists, a shard would get no document, a document without a ``str``
            ``"_id"``, or what ``HybridIndex.build`` raises for the documents or options.
        """
        root = Path(path)
        if root.exists():
            raise ValueError(f"{root} exists; build a sharded index into a new directory")
        n_shards = check_int("n_shards", n_shards, 1)
        batch_size = check_int("batch_size", batch_size, 1)
        options = dict(build_options or {})
        bm25 = options.get("bm25_options")
        if isinstance(bm25, Mapping) and isinstance(bm25.get("analyzer"), AnalyzerConfig):
            options["bm25_options"] = {**bm25, "analyzer": bm25["analyzer"].to_dict()}
        layout = ShardedLayout(n_shards, options)
        layout.write(root)
        actors = start_shards(root, n_shards, replicas, load_options, options, actor_options)
        try:
            fill_shards(ShardCalls([a[0] for a in actors], None), corpus, n_shards, batch_size)
            return cls(root, layout, actors, reranker=reranker, timeout_s=timeout_s)
        except BaseException:
            stop_shards(actors)
            shutil.rmtree(root, ignore_errors=True)
            raise

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        load_options: Mapping[str, Any] | None = None,
        actor_options: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        replicas: int = 1,
        reranker: CrossEncoder | None = None,
        timeout_s: float | None = None,
    ) -> ShardedIndex:
        """Open a sharded index that ``build`` wrote, every shard at the last decided commit
        (a decided transaction that a shard had not applied is applied, an undecided one
        rolled back: ``commit``), on new actors (the keywords as in ``build``).

        Raises
        ------
        IndexFormatError
            ``path`` is not a sharded index of this version.
        """
        root = Path(path)
        layout = ShardedLayout.read(root)
        actors = start_shards(
            root, layout.n_shards, replicas, load_options, layout.build_options, actor_options
        )
        try:
            return cls(root, layout, actors, reranker=reranker, timeout_s=timeout_s)
        except BaseException:
            stop_shards(actors)
            raise

    # -- properties ---------------------------------------------------------------------------

    @property
    def n_shards(self) -> int:
        return self._layout.n_shards

    @property
    def retrievers(self) -> tuple[str, ...]:
        return self._retrievers

    @property
    def generation(self) -> int:
        """The coordinated commit searches see now."""
        return self._writes.generation

    @property
    def path(self) -> Path:
        """The sharded index's directory."""
        return self._root

    @property
    def models(self) -> dict[str, dict[str, str] | None]:
        """The prepared model each model leg of the shards runs (``HybridIndex.models``)."""
        return dict(self._models)

    @property
    def reranker(self) -> CrossEncoder | None:
        """The cross-encoder searches rerank with on the coordinator, if any."""
        return self._shards.reranker

    @property
    def num_segments(self) -> int:
        """Segments of the current coordinated commit, over every shard."""
        generation = self._writes.generation
        return sum(self._writes.read("segments", [(generation,)] * self.n_shards))

    @property
    def staged(self) -> StagedChanges:
        """The changes staged on every shard and not committed yet (``HybridIndex.staged``)."""
        return self._writes.staged()

    @property
    def has_staged(self) -> bool:
        """Whether any shard holds staged changes."""
        return bool(self.staged)

    @property
    def actors(self) -> list[list[Any]]:
        """The Ray actor handles of each shard: its writer, then its read replicas."""
        return [list(actors) for actors in self._replicas]

    def __len__(self) -> int:
        """Live documents of the current coordinated commit."""
        return self._live_count(self._writes.generation)

    def _live_count(self, generation: int) -> int:
        """Live documents of ``generation``: the collection's BM25 count it was published
        with, or (no BM25 leg, or a generation forgotten) the sum of the shards' sizes."""
        prepared = self._writes.prepared(generation)
        if prepared is not None and prepared.stats is not None:
            return prepared.stats[0]
        return sum(self._calls.all("size", generation))

    # -- writing ------------------------------------------------------------------------------

    def add(self, documents: Iterable[Document]) -> list[str]:
        """Stage new documents on their shards (``HybridIndex.add``); ``commit`` makes them
        searchable. Each needs an ``"_id"`` (it routes the document): a ``str``, or an
        ``int`` taken as its decimal string (``ids.check_id``). An id in the index or staged
        is a ``DuplicateIdError`` naming it, and nothing is staged. Returns the staged ids,
        in order."""
        return self._writes.stage(documents, replace=False)

    def upsert(self, documents: Iterable[Document]) -> list[str]:
        """Stage documents, replacing those whose ids are in the index (``HybridIndex.upsert``);
        a replaced document moves to the end of the collection's order. Returns the staged
        ids, in order."""
        return self._writes.stage(documents, replace=True)

    def delete(self, ids: Iterable[str | int], *, missing_ok: bool = False) -> int:
        """Stage deletions by id (``HybridIndex.delete``): an unknown id is an
        ``UnknownIdError`` unless ``missing_ok``, and nothing is staged then."""
        return self._writes.delete(ids, missing_ok=missing_ok)

    def holds(self, ids: Iterable[str | int]) -> list[bool]:
        """Whether each of ``ids`` will be live after the next commit, as things are staged
        now (``HybridIndex.holds``)."""
        return self._writes.holds(ids)

    def rollback(self) -> StagedChanges:
        """Drop every change staged on every shard since the last commit; what was dropped
        (``HybridIndex.rollback``)."""
        return self._writes.rollback()

    def get(self, ids: Iterable[str | int], *, missing_ok: bool = False) -> list[Hit]:
        """The documents of the current coordinated commit with these ids, in the order of
        ``ids``, as hits of score NaN (``HybridIndex.get``), each read from its shard.

        Raises
        ------
        UnknownIdError
            An id no live document has (the first one named), unless ``missing_ok``: then
            it is left out.
        ShardUnavailableError
            The shard of an id did not answer.
        """
        ids = check_ids(ids)
        generation = self._writes.generation
        groups = group_by_shard(ids, self.n_shards)
        args = [(generation, [ids[i] for i in g]) if g else None for g in groups]
        found: list[Hit | None] = [None] * len(ids)
        for group, answer in zip(groups, self._writes.read("get", args), strict=True):
            for i, doc in zip(group, answer or [], strict=True):
                found[i] = None if doc is None else document_hit(doc, math.nan)
        return found_hits(ids, found, missing_ok=missing_ok)

    def commit(self) -> None:
        """Commit what every shard staged as one atomic transaction, then make the new
        commits visible to searches together: prepared on every shard, decided by one
        durable record, applied on every shard (docs/scaling.md "Atomic commits"). A
        coordinator or shard killed at any step leaves every shard readable at the last
        decided commit; ``open`` finishes a decided transaction and rolls back an undecided
        one.

        Raises
        ------
        ShardUnavailableError
            A shard did not answer, or restarted since changes were staged (they were lost
            with it): before the decision, the transaction is rolled back everywhere and
            every shard's staged changes are dropped (stage them again); after it, the
            commit is durable and the shards that did not apply it yet apply it when they
            answer again (``wait_ready()``, then ``commit()``). Searches keep the last
            generation until every shard applied it.
        """
        self._writes.commit("commit")

    def merge(self) -> None:
        """Commit, then compact every shard into one segment (``HybridIndex.merge``)."""
        self._writes.commit("merge")

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        """Wait until every actor of every shard answers: after Ray restarted one, before a
        write (which needs every shard's writer).

        Raises
        ------
        ShardUnavailableError
            Some actor still did not answer after ``timeout_s`` seconds.
        """
        actors = [actor for replicas in self._replicas for actor in replicas]
        calls = ShardCalls(actors, 5.0)
        deadline = time.monotonic() + timeout_s
        while True:
            _, failures = calls.gather("incarnation", [()] * len(actors), bounded=True)
            if not failures:
                return
            if time.monotonic() > deadline:
                raise ShardUnavailableError(
                    f"{len(failures)} shard actor(s) still do not answer after {timeout_s} s"
                )
            time.sleep(0.2)

    def close(self) -> None:
        """Give up every shard's write lock and stop the actors; staged changes are dropped."""
        try:
            self._calls.gather("close", [()] * self.n_shards)
        finally:
            stop_shards(self._replicas)

    def __enter__(self) -> ShardedIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- searching ----------------------------------------------------------------------------

    def _searched(self) -> tuple[tuple[str, ...], RerankerVerdict | None, int | None]:
        encoder = self._shards.encoder
        return self._retrievers, self._verdict, encoder.dim if encoder is not None else None

    def _run(self, plan: SearchPlan, num_threads: int | None, started: float) -> ShardedResult:
        """``plan`` fanned out to every shard at the current generation, merged, fused and
        reranked here (``distributed.search``)."""
        generation = self._writes.generation
        plan = plan.bounded(self._live_count(generation))  # memory bounded by the documents
        texts = plan.texts
        rows = nonblank_rows(texts)
        asked = [texts[row] for row in rows]
        vectors = None if plan.query_vectors is None else plan.query_vectors[rows]
        timings: dict[str, float] = {}
        search = ShardedSearch(self._shards, generation, plan, timings)
        found = search.legs(asked, num_threads, vectors) if asked else {}
        scores = np.full((len(texts), max(plan.k - plan.offset, 0)), -np.inf, np.float32)
        hit_lists: list[list[Hit]] = [[] for _ in texts]
        seqs: list[list[int]] = [[] for _ in texts]
        if found:
            ranked = search.ranked(found, asked)
            for i, (row, hits) in enumerate(zip(rows, search.hits(ranked), strict=True)):
                hit_lists[int(row)] = hits  # without the hits of a shard that did not answer
                seqs[int(row)] = search.hit_seqs[i]
                scores[row, : len(hits)] = [hit.score for hit in hits]
        timings["total"] = (time.perf_counter() - started) * 1000
        return ShardedResult(
            scores,
            hit_lists,
            timings,
            sorted(search.missing),
            generation,
            dict(sorted(search.shard_ms.items())),
            skipped=search.skipped,
            facets=(
                None
                if plan.facets is None
                else _every_row(search.facets or [], rows, len(texts), plan.facets)
            ),
            queries=texts,
            analyzer=self._analyzer,
            legs={name: _all_rows(leg, rows, len(texts)) for name, leg in found.items()},
            seqs=seqs,
        )


def _all_rows(result: SearchResult, rows: np.ndarray, n_queries: int) -> SearchResult:
    """``result`` of the non-blank queries at ``rows`` as one row per query, a blank one's
    all padding."""
    ids = np.full((n_queries, result.ids.shape[1]), PAD_ID, np.int64)
    scores = np.full(ids.shape, -np.inf, np.float32)
    ids[rows], scores[rows] = result.ids, result.scores
    return SearchResult(ids, scores)


def _every_row(
    per_row: list[Facets], rows: np.ndarray, n_queries: int, fields: tuple[str, ...]
) -> list[Facets]:
    """The facet counts ``per_row`` (of the non-blank queries at ``rows``) as one per query,
    a blank one's ``fields`` each without values (as one index counts a query without
    hits)."""
    out: list[Facets] = [{name: [] for name in fields} for _ in range(n_queries)]
    for row, counts in zip(rows.tolist(), per_row, strict=True):
        out[row] = counts
    return out


def _query_model(kind: type[Any], record: tuple[str, str, str] | None) -> Any:
    """The query encoder the shards' leg was built with (``describe``'s record: folder,
    variant, model hash), loaded on the coordinator; None without the leg."""
    if record is None:
        return None
    path, variant, model_hash = record
    model = kind.load(path, variant=variant)
    if model.model_hash != model_hash:
        raise ValueError(
            f"the model at {path} ({variant}) is not the one the shards were built with "
            f"(hash {model.model_hash}, the shards' {model_hash}); prepare the same model here"
        )
    return model
