"""The writing side of a sharded index: changes routed to their shards by id, commits of every
shard made atomic (two phases, ``transactions``) and visible together as one generation, and
the statistics each generation scores with.

A generation is one commit of every shard, pinned on each with the collection's BM25 counts
(``statistics.collection_counts``). Searches name the generation they started on, so they never
mix two commits; a shard that restarted since is prepared for it again from what ``publish``
kept (``prepared``).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.corpus import Document
from hybrid_engine.distributed.cluster import ShardCalls, ShardUnavailableError, is_unavailable
from hybrid_engine.distributed.documents import routed
from hybrid_engine.distributed.partition import group_by_shard
from hybrid_engine.distributed.statistics import CollectionCounts
from hybrid_engine.distributed.transactions import read_decided, write_decided
from hybrid_engine.errors import DuplicateIdError, UnknownIdError
from hybrid_engine.ids import check_ids
from hybrid_engine.live.pending import StagedChanges

APPLY_WAIT_S = 60.0
"""How long a commit waits for a restarting shard to apply a decided transaction."""
KEPT_GENERATIONS = 4
"""Generations whose statistics the coordinator keeps to prepare a restarted shard again
(the shards keep as many, ``worker.KEPT_GENERATIONS``)."""


@dataclass(frozen=True)
class Prepared:
    """What a generation pinned on the shards: each shard's commit, the collection's
    (documents, total length), and the collection's counts of terms (None without a BM25
    leg), to prepare a shard again that restarted since."""

    commits: list[int]
    stats: tuple[int, int] | None
    counts: CollectionCounts | None
    generation: int

    def prepare_call(self, shard: int, terms: list[str] | None) -> tuple[Any, ...] | None:
        """The arguments of ``ShardWorker.prepare`` for ``shard``, whose terms are ``terms``
        (``bm25_counts().terms``; None without a BM25 leg); None once the collection's
        counts moved on to a later generation."""
        doc_freqs = None
        if terms is not None and self.counts is not None:
            doc_freqs = self.counts.of(terms, self.generation)
            if doc_freqs is None:
                return None
        return (self.generation, self.commits[shard], self.stats, doc_freqs)


class ShardWrites:
    """Staging, committing and publishing over the shards of ``calls``; one writer at a time
    (a lock), searches from any thread (``generation`` and ``prepared`` are read atomically).

    Parameters
    ----------
    calls : ShardCalls
        The shards' writers.
    described : list of dict
        Each shard's ``ShardWorker.describe()``.
    readers : list of ShardCalls
        The shards' read replicas, one ``ShardCalls`` per replica rank (each publish
        prepares them too; one that fails is prepared again when a search asks it).
    root : Path
        The sharded index's directory: where ``decided.json`` records each commit.
    """

    def __init__(
        self,
        calls: ShardCalls,
        described: Sequence[dict[str, Any]],
        readers: Sequence[ShardCalls],
        root: Path,
    ) -> None:
        self._calls = calls
        self._root = root
        self._decided = read_decided(root)
        self._unapplied: list[int] = []  # shards that have not applied ``_decided`` yet
        self._readers = list(readers)
        self._n = len(described)
        self._lock = threading.Lock()
        self._incarnations = [answer["incarnation"] for answer in described]
        self._next_seq = max(answer["last_seq"] for answer in described) + 1
        self._staged = False
        self._published: dict[int, Prepared] = {}
        self._counts: CollectionCounts | None = None  # the collection's, at ``generation``
        self._commits: list[int] = []  # each shard's commit at ``generation``
        self.generation = 0
        self.publish()

    def prepared(self, generation: int) -> Prepared | None:
        """What ``generation`` pins on each shard (None once forgotten)."""
        return self._published.get(generation)

    # -- staging ------------------------------------------------------------------------------

    def stage(self, documents: Iterable[Document], *, replace: bool) -> list[str]:
        """Stage ``documents`` on their shards (``upsert`` with ``replace``, else ``add``:
        an id in the index or staged is a ``DuplicateIdError`` and nothing is staged); their
        ids, in order."""
        with self._lock:
            docs = routed(list(documents), itertools.count(self._next_seq))
            groups = group_by_shard([d["_id"] for d in docs], self._n)
            if not replace:
                for doc_id in self._held([d["_id"] for d in docs], groups, held=True):
                    raise DuplicateIdError(
                        f"document id {doc_id!r} is already in the index (or staged); use "
                        "upsert to replace it. Nothing was staged"
                    )
            args = [([docs[i] for i in g],) if g else None for g in groups]
            self._write("upsert" if replace else "add", args)
            self._next_seq += len(docs)
            return [d["_id"] for d in docs]

    def delete(self, ids: Iterable[str | int], *, missing_ok: bool) -> int:
        """Stage deletions by id (``ids.check_ids``: an ``int`` is its decimal string); an
        unknown id is an ``UnknownIdError`` unless ``missing_ok``, and nothing is staged
        then."""
        ids = check_ids(ids)
        with self._lock:
            groups = group_by_shard(ids, self._n)
            if not missing_ok:
                unknown = self._held(ids, groups, held=False)
                if unknown:
                    raise UnknownIdError(
                        f"{len(unknown)} id(s) are not in the index, e.g. {unknown[:5]}; nothing "
                        "was deleted (pass missing_ok=True to delete the others)"
                    )
            args = [([ids[i] for i in g], True) if g else None for g in groups]
            return sum(n for n in self._write("delete", args) if n is not None)

    def holds(self, ids: Iterable[str | int]) -> list[bool]:
        """Whether each of ``ids`` will be live after the next commit, as staged now
        (``HybridIndex.holds``), asked of its shard."""
        ids = check_ids(ids)
        with self._lock:
            return self._holds(ids, group_by_shard(ids, self._n))

    def staged(self) -> StagedChanges:
        """The changes every shard staged since the last commit, added up."""
        with self._lock:
            return _added_up(self._write("staged", [()] * self._n, staging=False))

    def rollback(self) -> StagedChanges:
        """Drop every shard's staged changes (``HybridIndex.rollback`` on each); what was
        dropped."""
        with self._lock:
            dropped = _added_up(self._write("rollback", [()] * self._n, staging=False))
            self._staged = False
        return dropped

    def _holds(self, ids: list[str], groups: list[list[int]]) -> list[bool]:
        """Whether each of ``ids`` (grouped by shard) will be live after its shard's next
        commit, as staged now; the caller holds the lock."""
        args = [([ids[i] for i in g],) if g else None for g in groups]
        out = [False] * len(ids)
        for group, answer in zip(groups, self._write("holds", args, staging=False), strict=True):
            for i, live in zip(group, answer or [], strict=True):
                out[i] = live
        return out

    def _held(self, ids: list[str], groups: list[list[int]], *, held: bool) -> list[str]:
        """The ids of ``ids`` (grouped by shard) that their shard does (``held``) or does not
        hold after its next commit, as staged now."""
        return [i for i, live in zip(ids, self._holds(ids, groups), strict=True) if live == held]

    # -- committing ---------------------------------------------------------------------------

    def commit(self, method: str = "commit") -> None:
        """Commit what every shard staged as one transaction (``transactions``: prepare,
        decide, apply), then publish the new commits as the next generation; ``method``
        ``"merge"`` then compacts every shard too.

        Raises
        ------
        ShardUnavailableError
            Before the decision (a shard did not answer, or restarted and lost its staged
            changes): the transaction is rolled back on every shard, and every shard's
            staged changes are dropped. After it: the commit is decided and durable, and the
            shards that did not apply it yet do so when they answer again (the next
            ``commit``, or ``open``); until then searches keep the last generation.
        """
        with self._lock:
            self._finish()
            txn = self._decided + 1
            try:
                self._verified([(None, i) for i in self._plain("incarnation")])
                self._write("prepare_commit", [(txn,)] * self._n, staging=False)
            except BaseException:
                self._abort(txn)
                raise
            write_decided(self._root, txn)  # the commit point of the sharded index
            self._decided, self._staged = txn, False
            self._unapplied = list(range(self._n))
            self._finish()
            if method == "merge":
                self._write("merge", [()] * self._n, staging=False)
            self.publish()

    def _finish(self) -> None:
        """Have the shards that have not applied the decided transaction apply it (a shard
        that restarted replays its prepared file), retrying while one is restarting for up
        to ``APPLY_WAIT_S``; ShardUnavailableError when one still does not answer."""
        deadline = time.monotonic() + APPLY_WAIT_S
        while self._unapplied:
            args = [(self._decided,) if s in self._unapplied else None for s in range(self._n)]
            _, failures = self._calls.gather("apply_commit", args)
            for error in failures.values():
                if not is_unavailable(error):
                    raise error
            self._unapplied = sorted(failures)
            if self._unapplied and time.monotonic() > deadline:
                raise ShardUnavailableError(
                    f"commit {self._decided} is decided and durable, but shards "
                    f"{self._unapplied} did not answer to apply it; they apply it when they "
                    "answer again (wait_ready(), then commit()), and searches see it then"
                )
            if self._unapplied:
                time.sleep(0.2)
        self._incarnations = self._plain("incarnation")

    def _abort(self, txn: int) -> None:
        """Roll back undecided transaction ``txn`` on every shard that answers (one that
        does not has lost its staged changes, and removes the prepared file when it opens
        again: ``recover``); the staged changes are dropped everywhere."""
        self._calls.gather("abort_commit", [(txn,)] * self._n)
        self._staged = False
        self._incarnations = [
            answer if answer is not None else old
            for answer, old in zip(
                self._calls.gather("incarnation", [()] * self._n)[0],
                self._incarnations,
                strict=True,
            )
        ]

    def publish(self, *, full: bool = False) -> None:
        """Have every shard pin its last commit as the next generation, scoring with the
        collection's BM25 counts: the last generation's plus every shard's changes since
        (``bm25_delta``), sent as the new counts of the terms that changed; or, the first
        time, after a shard restarted, or with ``full``, every shard's whole counts added
        up anew (``bm25_counts``), each shard sent the count of each of its terms."""
        commits = self._plain("commit_number")
        generation = self.generation + 1
        deltas = None if full or self._counts is None else self._plain("bm25_delta")
        if deltas is not None and all(
            delta is not None and delta.since == commit
            for delta, commit in zip(deltas, self._commits, strict=True)
        ):
            assert self._counts is not None
            terms, doc_freqs = self._counts.add(deltas, generation)
            stats: tuple[int, int] | None = self._counts.stats
            method = "prepare_delta"
            calls = [(generation, commit, stats, terms, doc_freqs) for commit in commits]
        else:
            method, calls = "prepare", self._whole_counts(commits, generation)
            stats = self._counts.stats if self._counts is not None else None
        self._calls.each(method, calls)
        for readers in self._readers:
            readers.gather(method, calls)
        self._published[generation] = Prepared(commits, stats, self._counts, generation)
        self._commits = commits
        self.generation = generation
        for old in sorted(self._published)[:-KEPT_GENERATIONS]:
            del self._published[old]

    def _whole_counts(self, commits: list[int], generation: int) -> list[tuple[Any, ...]]:
        """``prepare``'s arguments for every shard from every shard's whole counts, added up
        as the collection's counts of ``generation`` (None without a BM25 leg)."""
        counts = self._plain("bm25_counts")
        per_shard: list[np.ndarray | None] = [None] * self._n
        self._counts = None
        if all(c is not None for c in counts):
            self._counts, arrays = CollectionCounts.of_shards(counts, generation)
            per_shard = list(arrays)
        stats = self._counts.stats if self._counts is not None else None
        return [
            (generation, commit, stats, doc_freqs)
            for commit, doc_freqs in zip(commits, per_shard, strict=True)
        ]

    # -- calls --------------------------------------------------------------------------------

    def _write(
        self, method: str, args: Sequence[tuple[Any, ...] | None], *, staging: bool = True
    ) -> list[Any]:
        """``method`` on the shards of ``args``, each of which must answer with (value, its
        incarnation); the values. A shard that restarted since changes were staged lost
        them: every shard's staged changes are dropped and ``ShardUnavailableError`` raised,
        so a commit holds all of a batch or none of it."""
        values = self._verified(self._answers(method, args))
        self._staged = self._staged or staging
        return values

    def _verified(self, answers: list[tuple[Any, str] | None]) -> list[Any]:
        """The values of (value, incarnation) answers, after checking each shard is the
        process its staged changes went to."""
        values: list[Any] = []
        for shard, answer in enumerate(answers):
            if answer is None:
                values.append(None)
                continue
            value, incarnation = answer
            if incarnation != self._incarnations[shard]:
                self._restarted(shard)
            values.append(value)
        return values

    def _restarted(self, shard: int) -> None:
        """Shard ``shard`` restarted (reloading its last commit): fine when nothing was
        staged since the last commit, else raise."""
        lost = self._staged
        self._incarnations = self._plain("incarnation")
        if lost:
            self._calls.gather("discard", [()] * self._n)
            self._staged = False
            raise ShardUnavailableError(
                f"shard {shard} restarted since the last commit, losing its staged changes; "
                "every shard's staged changes were dropped: stage them again, then commit"
            )

    def read(self, method: str, args: Sequence[tuple[Any, ...] | None]) -> list[Any]:
        """``method(*args[i])`` on shard ``i``'s writer (none where ``args[i]`` is None), a
        read that stages nothing; ShardUnavailableError when one does not answer."""
        return self._answers(method, args)

    def _plain(self, method: str) -> list[Any]:
        return self._answers(method, [()] * self._n)

    def _answers(self, method: str, args: Sequence[tuple[Any, ...] | None]) -> list[Any]:
        answers, failures = self._calls.gather(method, args)
        for shard in sorted(failures):
            error = failures[shard]
            if is_unavailable(error):
                raise ShardUnavailableError(
                    f"shard {shard} did not answer {method} ({error}); a write needs every "
                    "shard: call wait_ready() (Ray restarts it at its last commit), then retry"
                ) from error
            raise error
        return answers


def _added_up(counts: Sequence[tuple[int, int]]) -> StagedChanges:
    """Every shard's (documents to add, documents to delete), added up."""
    return StagedChanges(sum(c[0] for c in counts), sum(c[1] for c in counts))
