"""``ParentDocumentIndex``: a live ``HybridIndex`` over the chunks of long documents that
searches, adds, replaces and deletes whole parent documents."""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.checks import check_int
from hybrid_engine.chunking import Chunker
from hybrid_engine.corpus import Document
from hybrid_engine.errors import DuplicateIdError, IndexFormatError, UnknownIdError
from hybrid_engine.ids import check_ids
from hybrid_engine.parents.aggregate import aggregate_parents, check_aggregate, merge_spans
from hybrid_engine.parents.context import pack_context
from hybrid_engine.parents.fields import (
    PARENT,
    PARENT_TEXT,
    POSITION,
    chunk_documents,
    chunk_id,
    read_parents,
    user_metadata,
)
from hybrid_engine.parents.results import ChunkHit, ContextSpan, ParentHit, ParentSearchResult
from hybrid_engine.pipeline.engine import HybridIndex
from hybrid_engine.pipeline.result import HybridResult

UNITS = ("documents", "chunks")
"""What ``search`` ranks: parent documents (their chunks aggregated) or the chunks."""


class ParentDocumentIndex:
    """Parent documents indexed as chunks in a live ``HybridIndex``, searched and changed as
    whole documents.

    Each parent becomes one inner document per chunk of its text (``Chunker``), id
    ``f"{parent_id}#{position}"``, with the parent's title and metadata; a text that fits one
    chunk is one chunk (a collection of short documents is indexed as it would be whole).
    The chunks carry their parent's id, position and character span in reserved metadata
    fields (names starting with ``"_chunk."``, which user metadata may not use), and chunk 0
    the parent's full text where it differs from its own, so everything the index knows of
    its parents is in the inner engine's documents and its crash-safe commit.

    Build one with ``build`` or open one with ``load``; ``add``, ``upsert`` and ``delete``
    stage changes by parent id and ``commit`` makes them visible, as in ``HybridIndex``.

    Notes
    -----
    Thread-safety: as ``HybridIndex``: searches from any threads, one writer. A search reads
    the parents' texts from the commit it ran on.
    """

    def __init__(self, engine: HybridIndex, chunker: Chunker, counts: dict[str, int]) -> None:
        """Use ``build`` or ``load``; ``counts`` is the chunks of every committed parent."""
        self._engine = engine
        self._chunker = chunker
        self._committed = counts
        self._staged: dict[str, int] = {}  # parent -> chunks after the staged changes; 0: gone

    @classmethod
    def build(
        cls, corpus: Iterable[Document], *, chunker: Chunker | None = None, **options: Any
    ) -> ParentDocumentIndex:
        """Chunk and index a corpus.

        Parameters
        ----------
        corpus : iterable of str or dict
            Parent documents ``{"_id", "title", "text", "metadata"}`` (plain text: no id,
            title or metadata); without ``_id`` (none may have one then) a document's position
            is its id.
        chunker : Chunker, optional
            Cuts the texts; ``Chunker.load()`` (the default bi-encoder's tokenizer, 200 tokens,
            40 of overlap) when None. Give the one of the dense leg's encoder.
        **options
            ``HybridIndex.build``'s options (``retrievers``, ``encoder``, ``bm25_options``,
            ``dense_options``, ``embedding_cache``, ...).

        Raises
        ------
        ValueError, TypeError
            A bad document, mixed or repeated ids, metadata with a reserved field name, or
            what ``HybridIndex.build`` raises.
        """
        chunker = chunker if chunker is not None else Chunker.load()
        parents = read_parents(corpus, ids_required=False)
        documents, counts = [], {}
        for parent in parents:
            chunks = chunk_documents(parent, chunker)
            documents.extend(chunks)
            counts[parent.id] = len(chunks)
        return cls(HybridIndex.build(documents, **options), chunker, counts)

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, chunker: Chunker | None = None, **options: Any
    ) -> ParentDocumentIndex:
        """Open the last commit of a directory that ``save`` wrote.

        Parameters
        ----------
        chunker : Chunker, optional
            For the documents added from now on: give the one the index was built with
            (its budget is not saved); ``Chunker.load()`` when None.
        **options
            ``HybridIndex.load``'s options (``encoder``, ``mmap``, ...).

        Raises
        ------
        IndexFormatError
            What ``HybridIndex.load`` raises, or a directory holding whole documents (a plain
            ``HybridIndex``) or chunks without all their siblings.
        """
        engine = HybridIndex.load(path, **options)
        positions: dict[str, set[int]] = {}
        for hit in engine.get(list(engine.doc_ids), missing_ok=True):
            parent = hit.metadata.get(PARENT)
            if not isinstance(parent, str):
                engine.close()
                raise IndexFormatError(
                    f"{Path(path)}: document {hit.id!r} has no {PARENT!r} field, so this is a "
                    "HybridIndex of whole documents, not a ParentDocumentIndex; open it with "
                    "HybridIndex.load"
                )
            positions.setdefault(parent, set()).add(int(hit.metadata[POSITION]))
        for parent, found in positions.items():
            if found != set(range(len(found))):
                engine.close()
                raise IndexFormatError(
                    f"{Path(path)}: parent {parent!r} has chunks {sorted(found)}, not 0..n-1; "
                    "the directory was changed by other means than a ParentDocumentIndex, "
                    "rebuild it"
                )
        chunker = chunker if chunker is not None else Chunker.load()
        return cls(engine, chunker, {parent: len(found) for parent, found in positions.items()})

    # -- changes ------------------------------------------------------------------------------

    def add(self, documents: Iterable[Document]) -> list[str]:
        """Stage new parent documents (each needs an ``_id``: a ``str``, or an ``int`` taken
        as its decimal string); ``commit`` makes them searchable.

        Returns
        -------
        list of str
            The ids of the parents staged, in order.

        Raises
        ------
        DuplicateIdError
            A parent id already in the index or staged (use ``upsert``), or given twice.
            Nothing is staged on an error.
        ValueError, TypeError
            A document without ``_id`` or with a bad one (``ids.check_id``), one with
            neither title nor text, a bad document or metadata value.
        """
        parents = read_parents(documents, ids_required=True)
        for parent in parents:
            if self._chunks_of(parent.id):
                raise DuplicateIdError(
                    f"parent id {parent.id!r} is already in the index (or staged); use upsert "
                    "to replace it"
                )
        staged = {parent.id: chunk_documents(parent, self._chunker) for parent in parents}
        self._engine.add([doc for chunks in staged.values() for doc in chunks])
        self._staged.update({parent: len(chunks) for parent, chunks in staged.items()})
        return list(staged)

    def upsert(self, documents: Iterable[Document]) -> list[str]:
        """Stage parent documents, replacing every chunk of those already in the index (a
        parent whose new text has fewer chunks loses the others); as ``add`` otherwise.

        Returns
        -------
        list of str
            The ids of the parents staged, in order.
        """
        parents = read_parents(documents, ids_required=True)
        staged = {parent.id: chunk_documents(parent, self._chunker) for parent in parents}
        stale = [
            chunk_id(parent, position)
            for parent, chunks in staged.items()
            for position in range(len(chunks), self._chunks_of(parent))
        ]
        self._engine.upsert([doc for chunks in staged.values() for doc in chunks])
        self._engine.delete(stale)
        self._staged.update({parent: len(chunks) for parent, chunks in staged.items()})
        return list(staged)

    def delete(self, ids: Iterable[str | int], *, missing_ok: bool = False) -> int:
        """Stage the deletion of parent documents (all their chunks) by id.

        Returns
        -------
        int
            Parents deleted.

        Raises
        ------
        UnknownIdError
            A ``KeyError`` naming the first id that is neither in the index nor staged,
            unless ``missing_ok`` (then unknown ids are skipped). Nothing is staged on an
            error.
        TypeError, ValueError
            ``ids`` is a single id, or holds something that is no id (``ids.check_ids``: an
            ``int`` is its decimal string).
        """
        parents: dict[str, int] = {}
        for parent in check_ids(ids):
            count = self._chunks_of(parent)
            if count:
                parents[parent] = count
            elif not missing_ok:
                raise UnknownIdError(
                    f"parent id {parent!r} is not in the index (nor staged); pass "
                    "missing_ok=True to skip unknown ids"
                )
        chunks = [
            chunk_id(p, position) for p, count in parents.items() for position in range(count)
        ]
        self._engine.delete(chunks)
        self._staged.update(dict.fromkeys(parents, 0))
        return len(parents)

    def commit(self, **options: Any) -> None:
        """Make the staged changes visible and durable (``HybridIndex.commit``'s options:
        ``embedding_cache``, ``num_threads``, ``show_progress``)."""
        self._engine.commit(**options)
        for parent, count in self._staged.items():
            if count:
                self._committed[parent] = count
            else:
                self._committed.pop(parent, None)
        self._staged.clear()

    @property
    def has_staged(self) -> bool:
        """Whether changes are staged and not committed yet (``close`` drops them)."""
        return self._engine.has_staged

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the last commit to the new (or empty) directory ``path`` and attach to it, as
        ``HybridIndex.save``."""
        self._engine.save(path)

    def close(self) -> None:
        """Give up the directory's write lock; staged changes are dropped."""
        self._engine.close()
        self._staged.clear()

    def __enter__(self) -> ParentDocumentIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reads --------------------------------------------------------------------------------

    @property
    def engine(self) -> HybridIndex:
        """The inner engine of chunks (read it; change it only through this index)."""
        return self._engine

    @property
    def chunker(self) -> Chunker:
        """The chunker of the documents added from now on."""
        return self._chunker

    def __len__(self) -> int:
        """Parents of the last commit."""
        return len(self._committed)

    def __repr__(self) -> str:
        return (
            f"ParentDocumentIndex({len(self)} documents, {len(self._engine)} chunks, "
            f"retrievers={list(self._engine.retrievers)})"
        )

    def search(
        self,
        queries: str | Sequence[str] | np.ndarray,
        k: int = 10,
        *,
        unit: str = "documents",
        aggregate: str = "max",
        chunk_depth: int | None = None,
        context_tokens: int | None = None,
        **options: Any,
    ) -> ParentSearchResult:
        """Search the chunks, then rank parents (or chunks), optionally packing the best
        chunks into a token budget.

        Parameters
        ----------
        queries : str, sequence of str or 1-d numpy array of str
            As ``HybridIndex.search``'s.
        k : int
            Parents (or chunks) per query, >= 1; a row is shorter when fewer were retrieved.
        unit : {"documents", "chunks"}
            Rank parents, each once, by ``aggregate`` of their retrieved chunks' scores; or
            the chunks themselves.
        aggregate : {"max", "sum", "first"}
            ``aggregate.AGGREGATES``: the best chunk's score (MaxP, the default), the sum of
            the retrieved chunks' scores, or the score of the parent's first chunk (parents
            whose first chunk was not retrieved are left out). docs/chunking.md measured max
            and first against truncation; sum rewards long documents.
        chunk_depth : int, optional
            Chunks retrieved per query (the inner search's ``k``), >= 1; at least ``k`` are
            used. Default ``max(100, 10 * k)``.
        context_tokens : int, optional
            Also pack each query's retrieved chunks, best first, into at most this many tokens
            (``context.pack_context``), >= 1.
        **options
            ``HybridIndex.search``'s options: ``fusion``, ``weights``, ``depth``, ``rerank``,
            ``blend``, ``mmr``, ``mmr_candidates``, ``filter`` (on the parents' metadata),
            ``num_threads``. They apply to the chunk ranking.

        Returns
        -------
        ParentSearchResult

        Raises
        ------
        ValueError, TypeError
            A bad ``unit``, ``aggregate``, ``chunk_depth`` or ``context_tokens``, or what
            ``HybridIndex.search`` raises.
        """
        started = time.perf_counter()
        k = check_int("k", k, 1)
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {list(UNITS)}, got {unit!r}")
        aggregate = check_aggregate(aggregate)
        depth = (
            max(100, 10 * k) if chunk_depth is None else check_int("chunk_depth", chunk_depth, 1)
        )
        if context_tokens is not None:
            context_tokens = check_int("context_tokens", context_tokens, 1)
        result = self._engine.search(queries, max(depth, k), **options)
        read = time.perf_counter()
        rows = [[ChunkHit.from_hit(hit) for hit in row] for row in result.hits()]
        documents = chunks = None
        if unit == "chunks":
            chunks = [row[:k] for row in rows]
        else:
            documents = [self._parents(result, row, aggregate, k) for row in rows]
        context: list[list[ContextSpan]] | None = None
        if context_tokens is not None:
            budget = context_tokens
            context = [pack_context(row, budget, self._chunker.count_tokens) for row in rows]
        done = time.perf_counter()
        timings = {
            **{name: ms for name, ms in result.timings.items() if name != "total"},
            "parents": (done - read) * 1e3,
            "total": (done - started) * 1e3,
        }
        return ParentSearchResult(
            unit,
            documents,
            chunks,
            context,
            timings,
            list(result.degraded),
            list(result.skipped),
            queries=result.queries,
            analyzer=result._documents().text_analyzer,
        )

    def _parents(
        self, result: HybridResult, row: list[ChunkHit], aggregate: str, k: int
    ) -> list[ParentHit]:
        """The top ``k`` parents of one query's chunks, their texts read from the commit the
        search ran on (``result.snapshot``)."""
        ranked = aggregate_parents(row, aggregate)[:k]
        firsts = result._documents().get(
            [chunk_id(parent, 0) for parent, _, _ in ranked], missing_ok=False
        )
        hits = []
        for (parent, score, chunks), first in zip(ranked, firsts, strict=True):
            hits.append(
                ParentHit(
                    parent,
                    score,
                    first.title,
                    first.metadata.get(PARENT_TEXT, first.text),
                    user_metadata(first.metadata),
                    merge_spans([(c.start, c.end) for c in chunks]),
                    [c.id for c in chunks],
                    (chunks[0].start, chunks[0].end),
                )
            )
        return hits

    def _chunks_of(self, parent: str) -> int:
        """Chunks of ``parent`` once the staged changes are committed (0: not there)."""
        return self._staged.get(parent, self._committed.get(parent, 0))
