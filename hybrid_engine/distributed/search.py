"""One search over the shards of a ``ShardedIndex``: every leg fanned out once, merged by
score, fused, then reranked and diversified over the merged candidates, and the hits read
from their shards.

Documents are named by their place in the collection's order (``partition.SEQ_FIELD``)
throughout, so ties break as in one index over every shard.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hybrid_engine.dense.encoding import QUERY, sided
from hybrid_engine.distributed.cluster import ShardCalls, ShardUnavailableError, is_unavailable
from hybrid_engine.distributed.worker import document_hit
from hybrid_engine.distributed.writes import Prepared
from hybrid_engine.errors import UnpreparedGenerationError
from hybrid_engine.live.topk import merge_top_k
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.pipeline.budget import RERANK
from hybrid_engine.pipeline.costs import StageCosts
from hybrid_engine.pipeline.facets import Facets, count_facets
from hybrid_engine.pipeline.fusion import fuse
from hybrid_engine.pipeline.mmr import mmr as mmr_order
from hybrid_engine.pipeline.plan import SearchPlan
from hybrid_engine.pipeline.relevance import above, relevance, relevance_of
from hybrid_engine.pipeline.rerank import rerank
from hybrid_engine.pipeline.rescore import rescore
from hybrid_engine.protocols import SparseEncoder, TextEncoder
from hybrid_engine.result import PAD_ID, Hit, SearchResult


@dataclass(frozen=True)
class SearchedShards:
    """What a search needs of a sharded index: the actors of each shard (``replicas[s]``: its
    writer first, then its read replicas), how long to wait for one, what each generation
    pinned on them, its legs, and the query-side models (run on the coordinator)."""

    replicas: list[list[Any]]
    timeout_s: float | None
    prepared: Callable[[int], Prepared | None]
    retrievers: tuple[str, ...]
    encoder: TextEncoder | None
    splade: SparseEncoder | None
    reranker: CrossEncoder | None
    turns: Iterator[int] = field(default_factory=itertools.count)
    costs: StageCosts = field(default_factory=StageCosts)
    """Running estimates of the reranker's milliseconds per pair, what ``budget_ms`` reads."""

    @property
    def n_shards(self) -> int:
        return len(self.replicas)


class ShardedSearch:
    """The stages of one sharded search on one generation."""

    def __init__(
        self,
        shards: SearchedShards,
        generation: int,
        plan: SearchPlan,
        timings: dict[str, float],
    ) -> None:
        self.shards = shards
        # Searches take turns over each shard's replicas; a replica that does not answer
        # hands its shard to the next.
        self._first = next(shards.turns)
        self._tries = [0] * shards.n_shards
        self._chosen = [actors[self._first % len(actors)] for actors in shards.replicas]
        self.calls = ShardCalls(self._chosen, shards.timeout_s)
        self.generation = generation
        self.plan = plan
        self.timings = timings
        self._started = time.perf_counter()
        self.skipped: list[str] = []  # optional stages left out to keep the budget
        self.missing: set[int] = set()
        self.shard_ms: dict[int, float] = {}  # each shard's own search, as it timed it
        self.owner: dict[int, int] = {}
        self.dense_vectors: np.ndarray | None = None
        self.facets: list[Facets] | None = None
        self.hit_seqs: list[list[int]] = []  # each kept hit's seq, row by row (``hits``)

    def _timed(self, stage: str, start: float) -> None:
        self.timings[stage] = self.timings.get(stage, 0.0) + (time.perf_counter() - start) * 1000

    def fan_out(self, method: str, args: Sequence[tuple[Any, ...] | None]) -> list[Any]:
        """``method`` on the shards of ``args``. A shard whose actor does not answer is asked
        through its next replica, one that restarted is prepared again and asked once more;
        a shard left without an answer is counted missing (raised under ``strict``)."""
        answers, failures = self.calls.gather(method, args, bounded=True)
        for _ in range(max(len(actors) for actors in self.shards.replicas) + 1):
            retry = [
                shard
                for shard, error in failures.items()
                if (
                    isinstance(error, UnpreparedGenerationError)
                    and (self._reprepare(shard) or self._next_replica(shard))
                )
                or (is_unavailable(error) and self._next_replica(shard))
            ]
            if not retry:
                break
            more, more_failures = self.calls.gather(
                method, [args[s] if s in retry else None for s in range(len(args))], bounded=True
            )
            for shard in retry:
                del failures[shard]
                if shard in more_failures:
                    failures[shard] = more_failures[shard]
                else:
                    answers[shard] = more[shard]
        for shard, error in failures.items():
            if not (is_unavailable(error) or isinstance(error, UnpreparedGenerationError)):
                raise error
            if self.plan.strict:
                raise ShardUnavailableError(
                    f"shard {shard} did not answer {method} ({error}); strict=False answers "
                    "from the other shards"
                ) from error
            self.missing.add(shard)
        return answers

    def _next_replica(self, shard: int) -> bool:
        """Ask ``shard`` through its next replica from now on; False when every one was
        tried."""
        actors = self.shards.replicas[shard]
        self._tries[shard] += 1
        if self._tries[shard] >= len(actors):
            return False
        self._chosen[shard] = actors[(self._first + self._tries[shard]) % len(actors)]
        self.calls = ShardCalls(self._chosen, self.shards.timeout_s)
        return True

    def _reprepare(self, shard: int) -> bool:
        """Prepare ``shard`` (restarted since) for this search's generation again."""
        prepared = self.shards.prepared(self.generation)
        if prepared is None:
            return False
        only = [() if s == shard else None for s in range(self.shards.n_shards)]
        answers, failures = self.calls.gather("bm25_counts", only)
        if failures:
            return False
        counts = answers[shard]
        call = prepared.prepare_call(shard, None if counts is None else counts.terms)
        if call is None:
            return False
        _, failures = self.calls.gather(
            "prepare", [call if s == shard else None for s in range(self.shards.n_shards)]
        )
        return not failures

    def legs(
        self, asked: list[str], num_threads: int | None, dense_vectors: np.ndarray | None
    ) -> dict[str, SearchResult]:
        """Each leg's top ``plan.width`` over every shard that answered, merged by score;
        ``dense_vectors`` (one row per query of ``asked``) are the dense leg's queries, None:
        ``asked`` encoded."""
        shards, plan = self.shards, self.plan
        start = time.perf_counter()
        splade_vectors = None
        self.dense_vectors = dense_vectors
        if shards.encoder is not None and dense_vectors is None:
            self.dense_vectors = sided(shards.encoder, QUERY).encode(asked)
        if shards.splade is not None:
            splade_vectors = shards.splade.encode(asked)
        self._timed("encode", start)
        start = time.perf_counter()
        call = (
            self.generation,
            asked,
            plan.width,
            plan.where,
            self.dense_vectors,
            splade_vectors,
            num_threads,
        )
        answers = self.fan_out("search", [call] * shards.n_shards)
        self._timed("shards", start)
        start = time.perf_counter()
        found: dict[str, SearchResult] = {}
        for leg in shards.retrievers:
            parts = []
            for shard, answer in enumerate(answers):
                if answer is None or leg not in answer[0]:
                    continue
                ids, scores = answer[0][leg]
                parts.append(SearchResult(ids, scores))
                for seq in ids[ids != PAD_ID].tolist():
                    self.owner[seq] = shard
            if parts:
                found[leg] = merge_top_k(parts, [0] * len(parts), plan.width)
        if not found:
            raise ShardUnavailableError("no shard answered the search")
        self.shard_ms = {s: answer[1] for s, answer in enumerate(answers) if answer is not None}
        self._timed("merge", start)
        return found

    def ranked(self, found: dict[str, SearchResult], asked: list[str]) -> SearchResult:
        """Fusion of the merged legs, facets and rescoring over every fused candidate, then
        reranking and MMR over the fused head (the stages of one index, in its order)."""
        plan = self.plan
        start = time.perf_counter()
        weights = None
        if plan.weights is not None:
            by_leg = dict(zip(self.shards.retrievers, plan.weights, strict=True))
            weights = [by_leg[name] for name in found]
            weights = weights if any(weights) else None
        results = list(found.values())
        # Facets count over every candidate, and rescoring may lift any of them into the head.
        kept = sum(r.ids.shape[1] for r in results) if plan.every_candidate else plan.candidates
        result = fuse(results, max(kept, 1), method=plan.fusion, weights=weights, depth=plan.width)
        values = relevance(result.scores, plan.fusion, weights, len(found))
        if plan.min_score is not None:
            result = above(result, values, plan.min_score)
        self._timed("fusion", start)
        if plan.every_candidate:
            result = self._over_candidates(result, values)
        pairs = len(asked) * (plan.rerank or 0)
        if plan.rerank is not None and self.shards.reranker is not None and self._affords(pairs):
            start = time.perf_counter()
            texts = self.fetch("texts", result.ids[:, : plan.rerank])
            result = _without_unanswered(result, texts, plan.rerank)
            result = rerank(
                result,
                asked,
                _Fetched(texts, int(result.ids.max()) + 1),
                self.shards.reranker,
                depth=plan.rerank,
                blend=plan.blend,
            )
            self._timed("rerank", start)
            self.shards.costs.observe(RERANK, self.timings[RERANK], pairs)
        if plan.mmr is not None and self.dense_vectors is not None:
            start = time.perf_counter()
            result = self._mmr(result)
            self._timed("mmr", start)
        page = slice(plan.offset, plan.k)
        return SearchResult(result.ids[:, page], result.scores[:, page])

    def _affords(self, pairs: int) -> bool:
        """Whether the reranker (the optional stage of a sharded search: the legs run in one
        call on each shard) fits what is left of ``plan.budget_ms``, by its running estimate
        for ``pairs`` (query, passage) pairs; one without estimate yet runs, and one skipped
        for ``costs.PROBE_AFTER_S`` is run once again to measure it. Skipped: named in
        ``skipped``."""
        budget_ms = self.plan.budget_ms
        estimate = self.shards.costs.estimate(RERANK, pairs)
        if budget_ms is None or estimate is None:
            return True
        spent = (time.perf_counter() - self._started) * 1000
        if spent + estimate <= budget_ms or self.shards.costs.claim_probe(RERANK):
            return True
        self.skipped.append(RERANK)
        return False

    def _over_candidates(self, fused: SearchResult, values: np.ndarray) -> SearchResult:
        """Facets (``self.facets``) and rescoring over every fused candidate, whose ids and
        metadata are fetched from their shards (those of a shard that did not answer leave
        the candidates, as they leave the head), then the head."""
        plan = self.plan
        start = time.perf_counter()
        fetched = self.fetch("fields", fused.ids)
        if len(fetched) < int((fused.ids != PAD_ID).sum()):
            kept = _without_unanswered(fused, fetched, fused.ids.shape[1])
            values = relevance_of(kept.ids, fused.ids, values)
            fused = kept
        fields = FetchedFields(fetched)
        self._timed("fields", start)
        result = fused
        if plan.facets is not None:
            start = time.perf_counter()
            self.facets = count_facets(fields, fused.ids, plan.facets)
            self._timed("facets", start)
        if plan.decay is not None or plan.expression is not None:
            start = time.perf_counter()
            result = rescore(fields, fused, values, plan.decay, plan.expression)
            self._timed("rescore", start)
        return SearchResult(result.ids[:, : plan.candidates], result.scores[:, : plan.candidates])

    def _mmr(self, result: SearchResult) -> SearchResult:
        """MMR over the fused head's vectors, fetched from their shards (those of a shard
        that did not answer leave the head)."""
        plan = self.plan
        assert plan.mmr is not None and self.dense_vectors is not None
        vectors = self.fetch("vectors", result.ids[:, : plan.mmr_pool])
        result = _without_unanswered(result, vectors, plan.mmr_pool)
        head = SearchResult(result.ids[:, : plan.mmr_pool], result.scores[:, : plan.mmr_pool])
        used = np.array(sorted(vectors), dtype=np.int64)
        if len(used) == 0:
            return SearchResult.empty(len(head), plan.k)
        local = np.where(head.ids == PAD_ID, PAD_ID, np.searchsorted(used, head.ids))
        matrix = np.stack([vectors[int(seq)] for seq in used])
        picks = mmr_order(
            SearchResult(local, head.scores), self.dense_vectors, matrix, plan.k, lambda_=plan.mmr
        )
        ids = np.where(picks.ids == PAD_ID, PAD_ID, used[np.maximum(picks.ids, 0)])
        return SearchResult(ids, picks.scores)

    def fetch(self, method: str, seqs: np.ndarray) -> dict[int, Any]:
        """``method`` ("texts", "vectors", "documents", "fields") of the documents ``seqs``
        (padding ignored), each asked of its shard, by seq; those of a shard that did not
        answer are left out (it is counted missing)."""
        wanted = sorted({int(s) for s in seqs.ravel() if s != PAD_ID})
        by_shard: list[list[int]] = [[] for _ in range(self.shards.n_shards)]
        for seq in wanted:
            by_shard[self.owner[seq]].append(seq)
        args = [(self.generation, group) if group else None for group in by_shard]
        answers = self.fan_out(method, args)
        out: dict[int, Any] = {}
        for group, answer in zip(by_shard, answers, strict=True):
            if group and answer is not None:
                out.update(zip(group, answer, strict=True))
        return out

    def hits(self, result: SearchResult) -> list[list[Hit]]:
        start = time.perf_counter()
        documents = self.fetch("documents", result.ids)
        out = []
        for ids, scores in zip(result.ids, result.scores, strict=True):
            row, seqs = [], []
            for seq, score in zip(ids.tolist(), scores.tolist(), strict=True):
                doc = documents.get(seq)
                if doc is not None:
                    row.append(document_hit(doc, float(score)))
                    seqs.append(seq)
            out.append(row)
            self.hit_seqs.append(seqs)
        self._timed("documents", start)
        return out


class FetchedFields:
    """The ids and metadata the shards sent of a search's candidates, by seq, read as a
    collection's (``protocols.FieldReader``) by facets and rescoring."""

    def __init__(self, fetched: dict[int, tuple[str, dict[str, Any]]]) -> None:
        self._fetched = fetched

    def field_values(self, field: str, positions: np.ndarray) -> list[list[object]]:
        out: list[list[object]] = []
        for seq in positions.tolist():
            metadata = self._fetched[seq][1]
            if field not in metadata:
                out.append([])
            else:
                value = metadata[field]
                out.append(value if isinstance(value, list) else [value])
        return out

    def doc_ids_at(self, positions: np.ndarray) -> list[str]:
        return [self._fetched[seq][0] for seq in positions.tolist()]


class _Fetched(Sequence[str]):
    """Fetched texts by seq, read by ``rerank`` as a corpus of ``size`` positions (it reads
    only the fetched ones)."""

    def __init__(self, texts: dict[int, str], size: int) -> None:
        self._texts = texts
        self._size = size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, seq: int) -> str:  # type: ignore[override]
        return self._texts[int(seq)]


def _without_unanswered(result: SearchResult, fetched: dict[int, Any], head: int) -> SearchResult:
    """``result`` without the documents of its first ``head`` columns that ``fetched`` lacks
    (their shard did not answer the fetch), each row compacted in order, padding last."""
    ids = result.ids
    asked = np.zeros(ids.shape, bool)
    asked[:, :head] = ids[:, :head] != PAD_ID
    if not asked.any():
        return result
    got = np.fromiter(fetched, np.int64, len(fetched))
    lost = asked & ~np.isin(ids, got)
    if not lost.any():
        return result
    order = np.argsort(lost, axis=1, kind="stable")
    kept_ids = np.where(lost, PAD_ID, ids)
    kept_scores = np.where(lost, -np.inf, result.scores).astype(np.float32)
    return SearchResult(
        np.take_along_axis(kept_ids, order, axis=1), np.take_along_axis(kept_scores, order, axis=1)
    )
