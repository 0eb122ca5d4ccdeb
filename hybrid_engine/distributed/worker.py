"""One shard of a ``ShardedIndex``: a live ``HybridIndex`` in its own directory, searched leg
by leg with the statistics of the whole collection. A Ray actor holds one (``cluster.py``); the
class itself knows nothing of Ray, so it is tested in-process too.

Results name documents by their place in the collection's order (``SEQ_FIELD``), which every
shard stores with each document: the coordinator merges the shards' lists by score and then
by that place, as one index over all documents breaks ties by position.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.distributed.partition import SEQ_FIELD
from hybrid_engine.distributed.transactions import (
    Change,
    prepared_files,
    prepared_path,
    read_prepared,
    remove_prepared,
    write_prepared,
)
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.errors import UnpreparedGenerationError
from hybrid_engine.lexical.analysis import AnalyzerConfig
from hybrid_engine.lexical.phrases import stitched
from hybrid_engine.lexical.statistics import CollectionStats
from hybrid_engine.live.commits import is_live_index
from hybrid_engine.live.query_groups import query_groups, search_bm25_groups
from hybrid_engine.live.snapshot import Snapshot
from hybrid_engine.metadata import Filter
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.splade import SpladeEncoder
from hybrid_engine.result import PAD_ID, Hit, SearchResult, SparseVectors

KEPT_GENERATIONS = 4
"""Prepared generations a shard keeps, so searches that started before the last coordinated
commits finish on theirs."""


@dataclass(frozen=True)
class BM25Counts:
    """A shard's live BM25 statistics at its last commit, for the coordinator to add up."""

    n_docs: int
    total_length: int
    terms: list[str]
    doc_freqs: np.ndarray


@dataclass(frozen=True)
class BM25Delta:
    """How a shard's live BM25 counts changed since the commit it was last prepared for (its
    baseline): what the coordinator adds to the collection's counts at a commit, instead of
    every term's count (``ShardWrites.publish``).

    Attributes
    ----------
    since : int or None
        The baseline commit; None when the shard has none (it restarted, or was never
        prepared): the coordinator then gathers every shard's whole counts.
    n_docs, total_length : int
        The shard's live documents and their total length now.
    terms : list of str
        The terms whose live count changed.
    changes : numpy.ndarray
        int64, aligned with ``terms``: the count now minus the count then.
    """

    since: int | None
    n_docs: int
    total_length: int
    terms: list[str]
    changes: np.ndarray


@dataclass(frozen=True)
class _View:
    """A pinned commit scoring with the collection's statistics, and each position's place
    in the collection's order (``seq``; its argsort to find places)."""

    commit: int
    snapshot: Snapshot
    seq: np.ndarray
    by_seq: np.ndarray


class ShardWorker:
    """A shard's engine and its prepared generations.

    Parameters
    ----------
    path : str
        The shard's index directory; loaded when it holds a commit.
    load_options : dict
        Keywords of ``HybridIndex.load`` (``mmap``, ``num_threads``...).
    build_options : dict
        The sharded index's ``build_options`` (``ShardedIndex.build``).
    replica : bool
        A read replica: it never writes, and ``prepare`` reloads the directory's last commit
        when it is behind.
    """

    def __init__(
        self,
        path: str,
        load_options: Mapping[str, Any],
        build_options: Mapping[str, Any],
        replica: bool = False,
    ) -> None:
        self._path = Path(path)
        self._replica = replica
        self._load_options = dict(load_options)
        self._build_options = dict(build_options)
        cache = self._build_options.pop("embedding_cache", False)
        self._cache = EmbeddingCache() if cache else None
        self._engine: HybridIndex | None = None
        # A commit point, not the directory: a read replica may start while its writer is
        # still writing the first one, and an actor whose constructor raised is dead for good.
        if is_live_index(self._path):
            self._engine = HybridIndex.load(self._path, **self._load_options)
        self._views: dict[int, _View] = {}
        # The changes staged since the last commit, for the prepared file of a transaction
        # (``transactions``), and the transaction this process prepared them for.
        self._changes: list[Change] = []
        self._prepared: int | None = None
        # The commit last pinned and its live BM25 counts (the baseline of ``bm25_delta``),
        # and the collection's counts it scored with, by shared term id.
        self._baseline: tuple[int, np.ndarray] | None = None
        self._collection: np.ndarray | None = None
        # Tells the coordinator this is not the process its staged changes went to.
        self._incarnation = uuid.uuid4().hex

    def incarnation(self) -> str:
        return self._incarnation

    def describe(self) -> dict[str, Any]:
        """The shard's retrievers, prepared models (``HybridIndex.models``), query encoders
        (folder, variant, model hash; None without the leg), BM25 analyzer settings,
        incarnation and the last place in the collection's order it holds."""
        engine = self._writable()
        splade = engine._state.splade_encoder
        seq = _sequence(engine.pinned()._snapshot)
        return {
            "retrievers": engine.retrievers,
            "models": engine.models,
            "dense": None if engine.encoder is None else _model_record(engine.encoder),
            "splade": None if splade is None else _model_record(splade),
            "analyzer": engine.pinned()._snapshot.text_analyzer.config.to_dict(),
            "incarnation": self._incarnation,
            "last_seq": int(seq.max()) if len(seq) else -1,
        }

    def rss_mib(self) -> float:
        """This process's resident set size, MiB: ``Rss`` of ``/proc/self/smaps_rollup``,
        counted from the page tables (``VmRSS`` of ``/proc/self/status``, where the kernel
        has no rollup, is kept in per-thread counters synced lazily, and in a busy process
        lagged a 64 MiB array written just before); 0.0 where the system has no ``/proc``."""
        for name, key in (("smaps_rollup", "Rss:"), ("status", "VmRSS:")):
            try:
                text = Path(f"/proc/self/{name}").read_text(encoding="ascii")
            except OSError:
                continue
            for line in text.splitlines():
                if line.startswith(key):
                    return int(line.split()[1]) / 1024
        return 0.0

    # -- writing ------------------------------------------------------------------------------

    def stage(self, documents: list[dict[str, Any]], started: bool) -> tuple[int, str]:
        """A building shard's next batch: its first builds the shard (encoded here) and saves
        it as the first commit; later ones are staged (``commit`` ends the build)."""
        if started:
            staged, incarnation = self.add(documents)
            return len(staged), incarnation
        if self._path.exists():
            raise RuntimeError(f"shard {self._path} exists already")
        engine = HybridIndex.build(
            documents, embedding_cache=self._cache, **_with_models(self._build_options)
        )
        engine.save(self._path)
        self._engine = engine
        return len(documents), self._incarnation

    def add(self, documents: list[dict[str, Any]]) -> tuple[list[str], str]:
        staged = self._writable().add(documents)
        self._changes.append(("upsert", documents))  # replayed as an upsert: idempotent
        return staged, self._incarnation

    def upsert(self, documents: list[dict[str, Any]]) -> tuple[list[str], str]:
        staged = self._writable().upsert(documents)
        self._changes.append(("upsert", documents))
        return staged, self._incarnation

    def holds(self, ids: list[str]) -> tuple[list[bool], str]:
        return self._writable().holds(ids), self._incarnation

    def staged(self) -> tuple[tuple[int, int], str]:
        """(documents to add, committed documents to delete) staged since the last commit."""
        changes = self._writable().staged
        return (changes.added, changes.deleted), self._incarnation

    def delete(self, ids: list[str], missing_ok: bool) -> tuple[int, str]:
        deleted = self._writable().delete(ids, missing_ok=missing_ok)
        self._changes.append(("delete", ids))
        return deleted, self._incarnation

    def commit(self) -> tuple[int, str]:
        """Commit what is staged (encoding it here), outside any transaction (the last step
        of a build); returns the commit."""
        self._writable().commit(embedding_cache=self._cache)
        self._changes = []
        return self.commit_number(), self._incarnation

    def merge(self) -> tuple[int, str]:
        self._writable().merge()
        return self.commit_number(), self._incarnation

    def rollback(self) -> tuple[tuple[int, int], str]:
        """Drop the staged changes (``HybridIndex.rollback``); (documents to add, to
        delete) that were dropped."""
        dropped = self._writable().rollback()
        self._changes, self._prepared = [], None
        return (dropped.added, dropped.deleted), self._incarnation

    def discard(self) -> None:
        """Drop the staged changes: reopen the last commit."""
        self._changes, self._prepared = [], None
        if self._engine is not None:
            self._engine.close()
            self._reload()

    # -- transactions (``transactions``) ------------------------------------------------------

    def prepare_commit(self, txn: int) -> tuple[None, str]:
        """Write the staged changes as transaction ``txn``'s prepared file (durably)."""
        write_prepared(self._path, txn, self._changes)
        self._prepared = txn
        return None, self._incarnation

    def apply_commit(self, txn: int) -> tuple[int, str]:
        """Commit decided transaction ``txn``: the changes staged here, or, in a process that
        did not prepare it (a restart), those of its prepared file; then remove the file.
        Applying it again is harmless. Returns the commit."""
        file = prepared_path(self._path, txn)
        if self._prepared != txn and file.exists():
            self._replay(file)
        self._writable().commit(embedding_cache=self._cache)
        remove_prepared(file)
        self._changes, self._prepared = [], None
        return self.commit_number(), self._incarnation

    def abort_commit(self, txn: int) -> None:
        """Roll back undecided transaction ``txn``: its prepared file removed, the staged
        changes dropped."""
        remove_prepared(prepared_path(self._path, txn))
        self.discard()

    def recover(self, decided: int) -> int:
        """Finish what a coordinator that died left: apply the prepared transactions up to
        ``decided`` (the last decided one), remove the others. Returns the commit."""
        for txn, file in prepared_files(self._path):
            if txn <= decided:
                self._replay(file)
                self._writable().commit(embedding_cache=self._cache)
            remove_prepared(file)
        return self.commit_number()

    def _replay(self, file: Path) -> None:
        """Stage the changes of a prepared file over the last commit."""
        self.discard()
        engine = self._writable()
        for kind, values in read_prepared(file):
            if kind == "upsert":
                engine.upsert(values)
            else:
                engine.delete(values, missing_ok=True)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()

    def _writable(self) -> HybridIndex:
        if self._engine is None:
            raise RuntimeError(f"shard {self._path} was never built")
        return self._engine

    # -- coordinating -------------------------------------------------------------------------

    def commit_number(self) -> int:
        """The commit searches of this shard would see now (0 before any)."""
        return 0 if self._engine is None else self._engine.generation

    def size(self, generation: int) -> int:
        """Live documents of ``generation``."""
        return self._view(generation).snapshot.num_live

    def bm25_counts(self) -> BM25Counts | None:
        """The live BM25 statistics of the last commit (None without a BM25 leg)."""
        snapshot = self._writable().pinned()._snapshot
        if snapshot.bm25_counts is None:
            return None
        stats, doc_freqs = snapshot.bm25_counts
        terms = snapshot.term_map.terms[: len(doc_freqs)]  # the map only grows
        return BM25Counts(stats.n_docs, stats.total_length, terms, doc_freqs)

    def bm25_delta(self) -> BM25Delta | None:
        """How the live BM25 counts of the last commit differ from those of the baseline
        (``BM25Delta``); None without a BM25 leg."""
        snapshot = self._writable().pinned()._snapshot
        if snapshot.bm25_counts is None:
            return None
        stats, counts = snapshot.bm25_counts
        if self._baseline is None:
            return BM25Delta(None, stats.n_docs, stats.total_length, [], np.zeros(0, np.int64))
        commit, before = self._baseline
        then = np.zeros(len(counts), np.int64)
        then[: len(before)] = before
        changed = np.flatnonzero(counts != then)
        terms = snapshot.term_map.take(changed)
        changes = (counts[changed] - then[changed]).astype(np.int64)
        return BM25Delta(commit, stats.n_docs, stats.total_length, terms, changes)

    def prepare(
        self,
        generation: int,
        commit: int,
        stats: tuple[int, int] | None,
        doc_freqs: np.ndarray | None,
    ) -> None:
        """Pin commit ``commit`` as ``generation``, its BM25 legs scoring with the
        collection's ``stats`` (documents, total length) and ``doc_freqs`` (aligned with
        ``bm25_counts().terms``; both None without a BM25 leg).

        Raises
        ------
        UnpreparedGenerationError
            The shard is at another commit (it restarted from an older one): the coordinator
            must gather its statistics again.
        """
        self._at(commit)
        # The view of ``generation``; the pinned commit's counts become the baseline.
        snapshot = self._writable().pinned()._snapshot
        if snapshot.bm25_counts is not None:
            self._baseline = (commit, snapshot.bm25_counts[1])
        if stats is not None and doc_freqs is not None:
            snapshot = snapshot.with_bm25_statistics(CollectionStats(*stats), doc_freqs)
            self._collection = np.asarray(doc_freqs, np.int64)
        seq = _sequence(snapshot)
        self._views[generation] = _View(commit, snapshot, seq, np.argsort(seq, kind="stable"))
        for old in sorted(self._views)[:-KEPT_GENERATIONS]:
            del self._views[old]

    def prepare_delta(
        self,
        generation: int,
        commit: int,
        stats: tuple[int, int],
        terms: list[str],
        doc_freqs: np.ndarray,
    ) -> None:
        """``prepare`` from the collection's counts of the last generation this shard was
        prepared for, with those of the ``terms`` whose count changed since set to
        ``doc_freqs`` (int64): a commit's statistics without every term's.

        Raises
        ------
        UnpreparedGenerationError
            The shard is at another commit, or has no counts of an earlier generation (it
            restarted): the coordinator prepares it with every term's count (``prepare``).
        """
        self._at(commit)
        if self._collection is None:
            raise UnpreparedGenerationError(f"shard {self._path} has no collection counts")
        snapshot = self._writable().pinned()._snapshot
        assert snapshot.bm25_counts is not None
        collection = np.zeros(len(snapshot.bm25_counts[1]), np.int64)
        kept = min(len(collection), len(self._collection))
        collection[:kept] = self._collection[:kept]
        ids = snapshot.term_map.find(terms)
        known = (ids >= 0) & (ids < len(collection))
        collection[ids[known]] = np.asarray(doc_freqs, np.int64)[known]
        self.prepare(generation, commit, stats, collection)  # at ``commit``: no reload

    def _reload(self) -> None:
        """Load the directory's last commit. Its term ids are new (``TermMap``), so the
        baseline and the collection's counts by term id are gone: the next statistics are
        gathered whole."""
        self._engine = HybridIndex.load(self._path, **self._load_options)
        self._baseline = self._collection = None

    def _at(self, commit: int) -> None:
        """Raise ``UnpreparedGenerationError`` unless the shard is at ``commit`` (a replica
        reloads the directory's last commit first)."""
        if self._replica and self.commit_number() != commit:
            self._reload()  # read-only
        if self.commit_number() != commit:
            raise UnpreparedGenerationError(
                f"shard {self._path} is at commit {self.commit_number()}, not {commit}"
            )

    def _view(self, generation: int) -> _View:
        view = self._views.get(generation)
        if view is None:
            raise UnpreparedGenerationError(
                f"shard {self._path} has not prepared generation {generation}"
            )
        return view

    # -- searching ----------------------------------------------------------------------------

    def search(
        self,
        generation: int,
        queries: list[str],
        width: int,
        where: Mapping[str, Any] | None,
        dense_vectors: np.ndarray | None,
        splade_vectors: SparseVectors | None,
        num_threads: int | None,
    ) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], float]:
        """Each leg's top ``width`` (seq ids, scores) of non-blank ``queries`` within
        ``where``: BM25 over the texts, dense over ``dense_vectors``, SPLADE over
        ``splade_vectors`` (a leg whose input is None is not searched); and the milliseconds
        this shard took."""
        start = time.perf_counter()
        view = self._view(generation)
        snapshot = view.snapshot
        allowed = snapshot.allowed(None if where is None else Filter.compile(where))
        groups = query_groups(snapshot, queries, allowed)  # the phrases they quote
        n = len(queries)
        found: dict[str, SearchResult] = {}
        if queries and snapshot.bm25_counts is not None:
            found["bm25"] = search_bm25_groups(snapshot, queries, groups, width, num_threads)
        if dense_vectors is not None:
            vectors = dense_vectors
            found["dense"] = stitched(
                n,
                groups,
                lambda masks, rows: snapshot.search_dense(vectors[rows], width, num_threads, masks),
            )
        if splade_vectors is not None:
            sparse = splade_vectors
            found["splade"] = stitched(
                n,
                groups,
                lambda masks, rows: snapshot.search_splade(
                    sparse.take(rows), width, num_threads, masks
                ),
            )
        legs = {
            leg: (np.where(hits.ids == PAD_ID, PAD_ID, view.seq[hits.ids]), hits.scores)
            for leg, hits in found.items()
        }
        return legs, (time.perf_counter() - start) * 1000

    def documents(self, generation: int, seqs: Sequence[int]) -> list[dict[str, Any]]:
        """The documents at ``seqs`` (of this shard) as ``{"id", "title", "text",
        "metadata"}``, metadata without ``SEQ_FIELD``."""
        view = self._view(generation)
        return [_document(view.snapshot.hit(int(p), 0.0)) for p in self._positions(view, seqs)]

    def fields(self, generation: int, seqs: Sequence[int]) -> list[tuple[str, dict[str, Any]]]:
        """The id and metadata (without ``SEQ_FIELD``) of the documents at ``seqs``: what
        facets and rescoring read of the fused candidates."""
        view = self._view(generation)
        positions = self._positions(view, seqs)
        metadata = view.snapshot.metadata_at(positions)
        return [
            (doc_id, {k: v for k, v in held.items() if k != SEQ_FIELD})
            for doc_id, held in zip(view.snapshot.doc_ids_at(positions), metadata, strict=True)
        ]

    def get(self, generation: int, ids: Sequence[str]) -> list[dict[str, Any] | None]:
        """The documents of ``generation`` with ``ids`` (of this shard), as ``documents``
        gives them; None for an id no live document has."""
        snapshot = self._view(generation).snapshot
        found = {hit.id: hit for hit in snapshot.get(list(ids), missing_ok=True)}
        return [None if i not in found else _document(found[i]) for i in ids]

    def segments(self, generation: int) -> int:
        """Segments of ``generation``'s commit."""
        return len(self._view(generation).snapshot.segments)

    def texts(self, generation: int, seqs: Sequence[int]) -> list[str]:
        """The indexed texts (as a reranker reads them) at ``seqs``."""
        view = self._view(generation)
        return [view.snapshot.text(int(p)) for p in self._positions(view, seqs)]

    def vectors(self, generation: int, seqs: Sequence[int]) -> np.ndarray:
        """float32 ``(len(seqs), dim)``: the dense vectors at ``seqs``."""
        view = self._view(generation)
        return view.snapshot.vectors(self._positions(view, seqs))

    @staticmethod
    def _positions(view: _View, seqs: Sequence[int]) -> np.ndarray:
        wanted = np.asarray(seqs, dtype=np.int64)
        found = np.searchsorted(view.seq, wanted, sorter=view.by_seq)
        positions = view.by_seq[np.minimum(found, len(view.seq) - 1)]
        if len(wanted) and not np.array_equal(view.seq[positions], wanted):
            raise KeyError("a document this shard does not hold was asked for")
        return positions


def _with_models(options: Mapping[str, Any]) -> dict[str, Any]:
    """``HybridIndex.build`` keywords from a sharded index's JSON build options: ``encoder``
    and ``splade_encoder`` given as ``{"model": name or folder, "variant": ...}`` are loaded
    here, in the actor; a BM25 ``analyzer`` given as the dict of its settings becomes an
    ``AnalyzerConfig``."""
    out = dict(options)
    bm25 = out.get("bm25_options")
    if isinstance(bm25, Mapping) and isinstance(bm25.get("analyzer"), Mapping):
        out["bm25_options"] = {**bm25, "analyzer": AnalyzerConfig(**bm25["analyzer"])}
    for key, kind in (("encoder", Encoder), ("splade_encoder", SpladeEncoder)):
        spec = out.get(key)
        if spec is not None:
            out[key] = kind.load(spec.get("model"), variant=spec.get("variant"))
    return out


def _model_record(model: Any) -> tuple[str, str, str]:
    return (str(model.info.path), model.variant, model.model_hash)


def _sequence(snapshot: Snapshot) -> np.ndarray:
    """int64 ``(snapshot.size,)``: each position's place in the collection's order, from
    ``SEQ_FIELD``."""
    parts = []
    for segment in snapshot.segments:
        column = segment.docs.metadata.column(SEQ_FIELD)
        if column is None or not np.array_equal(column.offsets, np.arange(len(segment) + 1)):
            raise ValueError(
                f"a segment of this shard lacks the {SEQ_FIELD!r} of some documents: it was not "
                "written by a ShardedIndex; rebuild it with ShardedIndex.build"
            )
        parts.append(column.numbers.astype(np.int64))
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def _document(hit: Hit) -> dict[str, Any]:
    """A shard's hit as ``{"id", "title", "text", "metadata"}``, metadata without
    ``SEQ_FIELD``: what ``documents`` and ``get`` send the coordinator."""
    metadata = {k: v for k, v in hit.metadata.items() if k != SEQ_FIELD}
    return {"id": hit.id, "title": hit.title, "text": hit.text, "metadata": metadata}


def document_hit(doc: Mapping[str, Any], score: float) -> Hit:
    """The hit of ``score`` of a document a shard sent (``_document``'s dict)."""
    return Hit(doc["id"], score, doc["title"], doc["text"], doc["metadata"])
