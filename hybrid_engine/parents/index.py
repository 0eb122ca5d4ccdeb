"""``ParentDocumentIndex``: a live ``HybridIndex`` over the chunks of long documents that
searches, adds, replaces and deletes whole parent documents."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.checks import check_int
from hybrid_engine.chunking import Chunker
from hybrid_engine.corpus import Document
from hybrid_engine.engine.asynchronous import AsyncEngine
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.ids import MAX_ID_CHARS, check_ids
from hybrid_engine.live.snapshot import found_hits
from hybrid_engine.parents.aggregate import aggregate_parents, check_aggregate, merge_spans
from hybrid_engine.parents.context import pack_context
from hybrid_engine.parents.fields import (
    PARENT,
    POSITION,
    chunk_documents,
    chunk_id,
    parent_hit,
    read_parents,
)
from hybrid_engine.parents.lifecycle import ParentLifecycle
from hybrid_engine.parents.result import ChunkHit, ContextSpan, ParentHit, ParentSearchResult
from hybrid_engine.pipeline.result import HybridResult
from hybrid_engine.result import Hit

UNITS = ("documents", "chunks")
"""What ``search`` ranks: parent documents (their chunks aggregated) or the chunks."""


class ParentDocumentIndex(ParentLifecycle, AsyncEngine[ParentSearchResult]):
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
    stage changes by parent id, ``commit`` (or ``merge``) makes them visible and
    ``rollback`` drops them; ``holds``, ``get`` and ``staged`` answer by parent id: the
    lifecycle of ``HybridIndex``, with parents for its documents.

    Notes
    -----
    Thread-safety: as ``HybridIndex``: searches from any threads, one writer. A search reads
    the parents' texts from the commit it ran on.
    """

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

    def get(self, ids: Iterable[str | int], *, missing_ok: bool = False) -> list[Hit]:
        """The parent documents of the last commit with these ids, in the order of ``ids``
        (``HybridIndex.get``).

        Parameters
        ----------
        ids : iterable of str or int
            Parent ids (``ids.check_ids``: an ``int`` is its decimal string); an id given
            twice comes back twice. Staged parents are not seen, as searches do not see them.
        missing_ok : bool
            Leave out the ids no committed parent has, instead of raising.

        Returns
        -------
        list of Hit
            One per id found: the parent's id, title, full text and metadata (its own, none
            of the reserved ``_chunk.`` fields), as given to ``add``/``upsert``/``build``;
            ``score`` NaN: a ``get`` is no search.

        Raises
        ------
        UnknownIdError
            A ``KeyError`` naming the first id not in the last commit, unless ``missing_ok``.
        TypeError, ValueError
            ``ids`` is a single id (wrap it in a list), or holds something that is no id.

        Notes
        -----
        Thread-safe: every parent is read from the one commit that was the last when the
        call started (its chunk 0 holds the parent whole).
        """
        ids = check_ids(ids)
        firsts = [chunk_id(parent, 0) for parent in ids]
        found = {  # a parent id too long to be a chunk's is in no index
            hit.id: hit
            for hit in self._engine.get(
                [first for first in firsts if len(first) <= MAX_ID_CHARS], missing_ok=True
            )
        }
        hits = [
            None if (hit := found.get(first)) is None else parent_hit(hit, math.nan)
            for first in firsts
        ]
        return found_hits(ids, hits, missing_ok=missing_ok)

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
            whole = parent_hit(first, score)
            hits.append(
                ParentHit(
                    parent,
                    score,
                    whole.title,
                    whole.text,
                    whole.metadata,
                    merge_spans([(c.start, c.end) for c in chunks]),
                    [c.id for c in chunks],
                    (chunks[0].start, chunks[0].end),
                )
            )
        return hits
