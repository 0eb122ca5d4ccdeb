"""What a parent-document search returns: chunk hits, parent hits with their matching spans,
context spans under a token budget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hybrid_engine.lexical.analysis import Analyzer
from hybrid_engine.parents.fields import END, PARENT, POSITION, START, user_metadata
from hybrid_engine.pipeline.highlight import Highlighted
from hybrid_engine.result import Hit


@dataclass(frozen=True)
class ChunkHit:
    """One retrieved chunk.

    Attributes
    ----------
    id : str
        The chunk's id in the inner engine, ``f"{parent_id}#{position}"``.
    parent_id : str
        Its parent's id.
    position : int
        Its 0-based position in the parent.
    start, end : int
        Character offsets into the parent's text: ``parent_text[start:end] == text``.
    score : float
        The inner engine's score of the chunk (fused, reranked or MMR's).
    title : str
        The parent's title.
    text : str
        The chunk's text.
    metadata : dict
        The parent's metadata (reserved fields left out).
    """

    id: str
    parent_id: str
    position: int
    start: int
    end: int
    score: float
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_hit(cls, hit: Hit) -> ChunkHit:
        """The chunk hit of an inner engine's hit."""
        meta = hit.metadata
        return cls(
            hit.id,
            meta[PARENT],
            meta[POSITION],
            meta[START],
            meta[END],
            hit.score,
            hit.title,
            hit.text,
            user_metadata(meta),
        )


@dataclass(frozen=True)
class ParentHit:
    """One retrieved parent document.

    Attributes
    ----------
    id : str
        The parent's id.
    score : float
        Its chunks' scores aggregated (``max``, ``sum`` or ``first``).
    title, text : str
        The parent's title and full text.
    metadata : dict
        The parent's metadata.
    spans : list of (int, int)
        The retrieved chunks' character spans in ``text``, overlapping and touching ones
        merged, in text order.
    chunk_ids : list of str
        The parent's retrieved chunks, best first.
    best_span : (int, int)
        The character span in ``text`` of its best-matching chunk (``chunk_ids[0]``).
    """

    id: str
    score: float
    title: str
    text: str
    metadata: dict[str, Any]
    spans: list[tuple[int, int]]
    chunk_ids: list[str]
    best_span: tuple[int, int]


@dataclass(frozen=True)
class ContextSpan:
    """A stretch of a parent's text for a reader's context window: one retrieved chunk, or
    several overlapping ones merged.

    Attributes
    ----------
    parent_id : str
        The parent's id.
    start, end : int
        Character offsets into the parent's text: ``parent_text[start:end] == text``.
    text : str
        The span's text.
    score : float
        The best score of its chunks.
    num_tokens : int
        Tokens of ``text`` in the chunker's tokenizer, special tokens not counted.
    """

    parent_id: str
    start: int
    end: int
    text: str
    score: float
    num_tokens: int


@dataclass(frozen=True)
class ParentSearchResult(Highlighted):
    """The result of ``ParentDocumentIndex.search``, one row per query.

    Attributes
    ----------
    unit : str
        ``"documents"`` or ``"chunks"``: which of ``documents`` and ``chunks`` is set.
    documents : list of list of ParentHit, or None
        With ``unit="documents"``: each query's parents, best first, at most ``k``.
    chunks : list of list of ChunkHit, or None
        With ``unit="chunks"``: each query's chunks, best first, at most ``k``.
    context : list of list of ContextSpan, or None
        With ``context_tokens``: each query's spans within the budget, best first.
    timings : dict of str to float
        The inner search's milliseconds per stage, plus ``"parents"`` (reading the retrieved
        chunks, aggregating, packing context) and ``"total"``.
    degraded, skipped : list of str
        The stages the inner search left out, failed or over its budget
        (``HybridResult.degraded`` and ``skipped``; docs/degradation.md).
    queries : list of str or None
        The query texts (what ``highlights`` marks).
    analyzer : Analyzer or None
        The inner index's BM25 analyzer (what decides a match in ``highlights``).
    """

    unit: str
    documents: list[list[ParentHit]] | None
    chunks: list[list[ChunkHit]] | None
    context: list[list[ContextSpan]] | None
    timings: dict[str, float]
    degraded: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    queries: list[str] | None = field(default=None, repr=False, compare=False, kw_only=True)
    analyzer: Analyzer | None = field(default=None, repr=False, compare=False, kw_only=True)

    def _highlighted(
        self,
    ) -> tuple[Sequence[str], list[list[str]], Callable[[str], list[str]]]:
        """A parent's text is its best-matching chunk (``ParentHit.best_span``), a chunk's
        its own."""
        if self.queries is None or self.analyzer is None:
            raise ValueError("this result was not returned by ParentDocumentIndex.search")
        texts: list[list[str]]
        if self.documents is not None:
            texts = [[hit.text[slice(*hit.best_span)] for hit in row] for row in self.documents]
        else:
            texts = [[hit.text for hit in row] for row in self.chunks or []]
        return self.queries, texts, self.analyzer.analyze

    def hits(self) -> list[list[ParentHit]] | list[list[ChunkHit]]:
        """Each query's hits, best first: ``documents``, or ``chunks`` for ``unit="chunks"``
        (as ``HybridResult.hits``)."""
        return self.documents if self.documents is not None else self.chunks or []

    @property
    def ids(self) -> list[list[str]]:
        """Each query's hit ids, best first: parent ids, or chunk ids for ``unit="chunks"``
        (the same as ``doc_ids``: a parent index has no positions of its own to give)."""
        return [[hit.id for hit in row] for row in self.hits()]

    @property
    def doc_ids(self) -> list[list[str]]:
        """Each query's hit ids, best first (as ``HybridResult.doc_ids``)."""
        return self.ids

    @property
    def scores(self) -> np.ndarray:
        """float32 ``(n_queries, width)``: each query's hit scores, best first, ``-inf`` where
        its row is shorter than the longest (as ``HybridResult.scores``)."""
        rows = [[hit.score for hit in hits] for hits in self.hits()]
        scores = np.full((len(rows), max(map(len, rows), default=0)), -np.inf, np.float32)
        for row, found in enumerate(rows):
            scores[row, : len(found)] = found
        return scores
