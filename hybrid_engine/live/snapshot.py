"""A snapshot: one committed state of a live engine, immutable, searched as one collection.

A snapshot is a sequence of segments, each with a mask of its live documents (None when none
is deleted), and everything derived from them once per commit: the BM25 legs scoring with the
live collection's statistics (``statistics``), the global position of every document
(segment after segment, in order: ``bases``) and the id of every live document.

Every search runs on the one snapshot it started with, so it never sees half a commit.
Results carry global positions, valid in that snapshot only; ``HybridResult`` keeps it to
turn them into ids and hits.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property
from typing import Any

import numpy as np

from hybrid_engine._threads import map_parts
from hybrid_engine.corpus import DocIds
from hybrid_engine.dense.candidates import search_pooled
from hybrid_engine.dense.index import DenseIndex, joined_exact
from hybrid_engine.errors import UnknownIdError
from hybrid_engine.ids import check_ids
from hybrid_engine.lexical.analysis import Analyzer
from hybrid_engine.lexical.index import BM25Index
from hybrid_engine.lexical.statistics import CollectionStats
from hybrid_engine.live.documents import LiveDocuments, packed, without_title
from hybrid_engine.live.segment import Segment
from hybrid_engine.live.statistics import TermMap, live_counts, scored_views
from hybrid_engine.live.topk import merge_top_k
from hybrid_engine.metadata import Filter
from hybrid_engine.metadata.values import MISSING
from hybrid_engine.packed import PackedStrings
from hybrid_engine.result import Hit, SearchResult, SparseVectors, hits_width

Masks = list[np.ndarray | None]
"""One bool mask per segment of the documents a search may return; None: every one."""


class Snapshot:
    """Segments and their live masks, searched as one collection of global positions."""

    def __init__(
        self,
        segments: Sequence[Segment],
        live: Sequence[np.ndarray | None],
        term_map: TermMap,
        term_maps: Sequence[np.ndarray],
    ) -> None:
        """``live[i]`` is segment ``i``'s mask (None: all live); ``term_maps[i]`` is
        ``term_map.map`` of its BM25 leg (empty without one)."""
        self.segments = tuple(segments)
        self.live = tuple(live)
        self.term_map = term_map
        self.term_maps = tuple(term_maps)
        sizes = [len(segment) for segment in self.segments]
        self.bases = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.num_live = sum(
            len(seg) if mask is None else int(mask.sum())
            for seg, mask in zip(self.segments, self.live, strict=True)
        )
        self._bm25: list[BM25Index] = []
        self.bm25_counts: tuple[CollectionStats, np.ndarray] | None = None
        legs = [segment.bm25 for segment in self.segments]
        if legs and all(leg is not None for leg in legs):
            self.bm25_counts = live_counts(legs, self.live, self.term_maps, len(term_map))  # type: ignore[arg-type]
            self._bm25 = scored_views(legs, self.term_maps, *self.bm25_counts)  # type: ignore[arg-type]
        self._ids: dict[str, tuple[int, int]] | None = None
        self._kinds: dict[str, frozenset[int]] = {}

    def with_bm25_statistics(self, stats: CollectionStats, doc_freqs: np.ndarray) -> Snapshot:
        """This snapshot with its BM25 legs scoring with the statistics of a collection that
        holds it (every shard of a sharded index).

        Parameters
        ----------
        stats : CollectionStats
            The collection's live documents and their total length.
        doc_freqs : numpy.ndarray
            int64 ``(len(term_map),)``: the collection's live document count of each of
            ``term_map.terms``.

        Raises
        ------
        ValueError
            No BM25 leg, another shape, or ``stats`` or a count below this snapshot's own (a
            collection that holds it cannot have fewer).
        """
        if self.bm25_counts is None:
            raise ValueError("this snapshot has no BM25 leg to score with outside statistics")
        own_stats, own = self.bm25_counts
        doc_freqs = np.asarray(doc_freqs)
        if doc_freqs.dtype != np.int64 or doc_freqs.shape != own.shape:
            raise ValueError(
                f"doc_freqs must be int64 of shape {own.shape} (one count per term of "
                f"term_map.terms), got {doc_freqs.dtype} {doc_freqs.shape}"
            )
        below = np.flatnonzero(doc_freqs < own)
        if stats.n_docs < own_stats.n_docs or stats.total_length < own_stats.total_length:
            raise ValueError(
                f"collection statistics {stats} are below this snapshot's own {own_stats}: "
                "they must be those of a collection that holds it"
            )
        if len(below):
            term = self.term_map.terms[int(below[0])]
            raise ValueError(
                f"term {term!r} is in {own[below[0]]} live documents here but "
                f"{doc_freqs[below[0]]} in the collection: it must hold this snapshot"
            )
        legs = [segment.bm25 for segment in self.segments]
        view = copy.copy(self)
        view._bm25 = scored_views(legs, self.term_maps, stats, doc_freqs)  # type: ignore[arg-type]
        return view

    # -- documents ----------------------------------------------------------------------------

    @property
    def size(self) -> int:
        """Global positions: live and deleted documents of every segment."""
        return int(self.bases[-1])

    @cached_property
    def doc_ids(self) -> DocIds:
        """The id of every global position."""
        return DocIds(self.size, self._joined("ids"))

    @cached_property
    def texts(self) -> PackedStrings:
        """The indexed text of every global position."""
        return self._joined("texts")

    @cached_property
    def titles(self) -> PackedStrings:
        """The title of every global position."""
        return self._joined("titles")

    def _joined(self, column: str) -> PackedStrings:
        """The ``column`` of every segment's documents as one, packed (compressed texts
        decompressed)."""
        joined = PackedStrings.from_strings([])
        for segment in self.segments:
            joined = joined.concat(packed(getattr(segment.docs, column)))
        return joined

    def locations(self) -> dict[str, tuple[int, int]]:
        """Live document id to (segment, local position), built on first use."""
        if self._ids is None:
            ids: dict[str, tuple[int, int]] = {}
            for s, (segment, mask) in enumerate(zip(self.segments, self.live, strict=True)):
                doc_ids = segment.docs.ids
                rows = range(len(segment)) if mask is None else np.flatnonzero(mask).tolist()
                for row in rows:
                    ids[doc_ids[row]] = (s, row)
            self._ids = ids
        return self._ids

    def locate(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(segment, local position) of global ``positions`` (int64, none padding)."""
        segments = np.searchsorted(self.bases, positions, side="right") - 1
        return segments, positions - self.bases[segments]

    def live_positions(self) -> Iterator[tuple[int, np.ndarray]]:
        """(segment, its live local positions) in order."""
        for s, (segment, mask) in enumerate(zip(self.segments, self.live, strict=True)):
            rows = np.arange(len(segment)) if mask is None else np.flatnonzero(mask)
            yield s, rows.astype(np.int64)

    def doc_id(self, position: int) -> str:
        s, row = self._one(position)
        return self.segments[s].docs.ids[row]

    def text(self, position: int) -> str:
        """The indexed text (title and text) at a global position, as a reranker reads it."""
        s, row = self._one(position)
        return self.segments[s].docs.texts[row]

    def hit(self, position: int, score: float) -> Hit:
        return self._hit(*self._one(position), score)

    def doc_ids_at(self, positions: np.ndarray) -> list[str]:
        """The ids at global ``positions`` (int64, none padding), in that order: gathered
        from each segment's packed ids at once (``PackedStrings.take``), with no Python call
        per position."""
        return self._per_segment(positions, lambda docs, rows, _: docs.ids.take(rows))

    def metadata_at(self, positions: np.ndarray) -> list[dict[str, Any]]:
        """The metadata records of the documents at global ``positions`` (int64, none
        padding), in that order."""
        return self._per_segment(positions, lambda docs, rows, _: docs.metadata.records(rows))

    def hits_at(self, positions: np.ndarray, scores: np.ndarray) -> list[Hit]:
        """The hits at global ``positions`` (int64, none padding) with ``scores``, in that
        order; ids, titles and texts gathered from each segment at once."""
        values = scores.tolist()

        def hits(docs: LiveDocuments, rows: np.ndarray, picked: np.ndarray) -> list[Hit]:
            ids, titles, texts = docs.ids.take(rows), docs.titles.take(rows), docs.texts.take(rows)
            records = docs.metadata.records(rows)
            return [
                Hit(doc_id, values[i], title, without_title(text, title), meta)
                for doc_id, i, title, text, meta in zip(
                    ids, picked.tolist(), titles, texts, records, strict=True
                )
            ]

        return self._per_segment(positions, hits)

    @property
    def has_positions(self) -> bool:
        """Whether every segment's BM25 leg records positions: what phrase queries need
        (``live.query_groups``)."""
        legs = [segment.bm25 for segment in self.segments]
        return bool(legs) and all(leg is not None and leg.has_positions for leg in legs)

    @cached_property
    def text_analyzer(self) -> Analyzer:
        """The analyzer of the BM25 leg (its settings, in every segment the same), the
        default one without the leg: what highlights mark words by."""
        for segment in self.segments:
            if segment.bm25 is not None:
                return Analyzer(segment.bm25.analyzer)
        return Analyzer()

    def field_values(self, field: str, positions: np.ndarray) -> list[list[object]]:
        """The values of metadata ``field`` each document at global ``positions`` (int64, none
        padding) holds, in that order: a scalar as a list of one, a list as it is, none for
        a document without the field."""

        def read(docs: LiveDocuments, rows: np.ndarray, _: np.ndarray) -> list[list[object]]:
            column = docs.metadata.column(field)
            if column is None:
                return [[] for _ in rows]
            values: list[list[object]] = []
            for row in rows.tolist():
                if column.state[row] == MISSING:
                    values.append([])
                else:
                    value = column.value(row)
                    values.append(value if isinstance(value, list) else [value])
            return values

        if len(positions) == 0:
            return []
        return self._per_segment(positions, read)

    def _per_segment(
        self,
        positions: np.ndarray,
        read: Callable[[LiveDocuments, np.ndarray, np.ndarray], list[Any]],
    ) -> list[Any]:
        """``read(docs, rows, picked)`` of each segment holding some of ``positions``
        (``picked``: their indexes in ``positions``, ``rows`` their local positions), put
        back in the order of ``positions``. ``read`` returns one item per row, none a
        sequence."""
        segments, rows = self.locate(np.asarray(positions, dtype=np.int64))
        if len(self.segments) == 1:
            return read(self.segments[0].docs, rows, np.arange(len(rows)))
        out = np.empty(len(rows), dtype=object)
        for s in np.unique(segments).tolist():
            picked = np.flatnonzero(segments == s)
            out[picked] = read(self.segments[s].docs, rows[picked], picked)
        return out.tolist()

    def get(self, ids: Iterable[str | int], *, missing_ok: bool) -> list[Hit]:
        """The live documents with ``ids``, in that order, as hits of score NaN.

        Raises
        ------
        TypeError, ValueError
            ``ids`` is a single id, or holds something that is no id (``ids.check_ids``: an
            ``int`` is its decimal string).
        UnknownIdError
            An id that no live document has (the first one named), unless ``missing_ok``:
            then it is left out.
        """
        ids = check_ids(ids)
        locations = self.locations()
        found = [
            None if (where := locations.get(doc_id)) is None else self._hit(*where, math.nan)
            for doc_id in ids
        ]
        return found_hits(ids, found, missing_ok=missing_ok)

    def _hit(self, s: int, row: int, score: float) -> Hit:
        docs = self.segments[s].docs
        metadata = docs.metadata.record(row)
        return Hit(docs.ids[row], float(score), docs.titles[row], docs.text(row), metadata)

    def vectors(self, positions: np.ndarray) -> np.ndarray:
        """float32 ``(len(positions), dim)``: the dense vectors at global ``positions``."""
        segments, rows = self.locate(np.asarray(positions, dtype=np.int64))
        first = self.segments[0].dense
        assert first is not None
        out = np.empty((len(rows), first.dim), dtype=np.float32)
        for s in np.unique(segments):
            dense = self.segments[s].dense
            assert dense is not None
            picked = segments == s
            out[picked] = dense.vectors[rows[picked]]
        return out

    def _one(self, position: int) -> tuple[int, int]:
        s = int(np.searchsorted(self.bases, position, side="right") - 1)
        return s, int(position - self.bases[s])

    # -- filters ------------------------------------------------------------------------------

    def field_kinds(self, field: str) -> frozenset[int]:
        """The kind codes (``metadata.values``) of the values the live documents hold in
        ``field``, list items included; empty when none holds it. Computed once per field."""
        kinds = self._kinds.get(field)
        if kinds is None:
            kinds = frozenset()
            for segment, mask in zip(self.segments, self.live, strict=True):
                column = segment.docs.metadata.column(field)
                if column is not None:
                    kinds |= column.held_kinds(mask)
            self._kinds[field] = kinds
        return kinds

    def check_filter(self, where: Filter | None) -> None:
        """Raise ``TypeError`` when ``where`` compares a field with a value of another type
        than the values its live documents hold (``Filter.check_kinds``)."""
        if where is not None:
            where.check_kinds(self.field_kinds)

    def allowed(self, where: Filter | None) -> Masks:
        """Each segment's mask of the live documents matching ``where`` (None: all live)."""
        if where is None:
            return list(self.live)
        masks: Masks = []
        for segment, mask in zip(self.segments, self.live, strict=True):
            matching = where.mask(segment.docs.metadata)
            masks.append(matching if mask is None else matching & mask)
        return masks

    # -- the legs -----------------------------------------------------------------------------

    # Each leg returns ``hits_width(k, num_live)`` columns: its segments, each asked for at
    # most its own size, hold at least that many.

    def search_bm25(
        self, queries: list[str], k: int, num_threads: int | None, allowed: Masks
    ) -> SearchResult:
        k = hits_width(k, self.num_live)
        if k == 0:
            return SearchResult.empty(len(queries), 0)

        def search(s: int, threads: int | None) -> SearchResult:
            return self._bm25[s].search(queries, k, num_threads=threads, allowed=allowed[s])

        parts = map_parts(search, len(self._bm25), len(queries), num_threads)
        return self._merged(parts, len(queries), k)

    def search_dense(
        self, vectors: np.ndarray, k: int, num_threads: int | None, allowed: Masks
    ) -> SearchResult:
        """Each run of segments searched as one (``_dense_runs``), the graphs' candidates
        rescored from one pool (``candidates.search_pooled``), merged by score."""
        k = hits_width(k, self.num_live)
        if k == 0:
            return SearchResult.empty(len(vectors), 0)
        legs, bases = [], []
        for start, stop, index in self._dense_runs:
            masks = allowed[start:stop]
            mask = None
            if any(m is not None for m in masks):
                mask = np.concatenate(
                    [
                        np.ones(len(self.segments[s]), bool) if m is None else m
                        for s, m in zip(range(start, stop), masks, strict=True)
                    ]
                )
            legs.append((index, mask))
            bases.append(int(self.bases[start]))
        if not legs:
            return SearchResult.empty(len(vectors), k)
        parts = search_pooled(legs, vectors, k, num_threads)
        return merge_top_k(parts, bases, k)

    @cached_property
    def _dense_runs(self) -> list[tuple[int, int, DenseIndex]]:
        """The dense legs as ``(first segment, stop, index)`` runs: a segment with an HNSW
        graph alone, and consecutive exact-only segments (each at most ``exact_threshold``
        vectors) joined into one exact index over their vectors, built on first use. A
        search then pays one exact pass over them rather than one per segment; the vectors
        are the segments' own, so every score, and the tie order, is the same."""
        runs: list[tuple[int, int, DenseIndex]] = []
        start = 0
        while start < len(self.segments):
            first = self.segments[start].dense
            assert first is not None
            stop = start + 1
            if not first.uses_graph:
                while stop < len(self.segments):
                    dense = self.segments[stop].dense
                    if dense is None or dense.uses_graph:
                        break
                    stop += 1
            if stop - start == 1:
                runs.append((start, stop, first))
            else:
                legs = [self.segments[s].dense for s in range(start, stop)]
                runs.append((start, stop, joined_exact(legs)))  # type: ignore[arg-type]
            start = stop
        return runs

    def search_splade(
        self, vectors: SparseVectors, k: int, num_threads: int | None, allowed: Masks
    ) -> SearchResult:
        k = hits_width(k, self.num_live)
        if k == 0:
            return SearchResult.empty(len(vectors.offsets) - 1, 0)
        n_queries = len(vectors.offsets) - 1

        def search(s: int, threads: int | None) -> SearchResult:
            splade = self.segments[s].splade
            assert splade is not None
            return splade.search(vectors, k, num_threads=threads, allowed=allowed[s])

        parts = map_parts(search, len(self.segments), n_queries, num_threads)
        return self._merged(parts, n_queries, k)

    def _merged(self, parts: list[SearchResult], n_queries: int, k: int) -> SearchResult:
        if not parts:
            return SearchResult.empty(n_queries, k)
        return merge_top_k(parts, self.bases[:-1].tolist(), k)


def found_hits(ids: list[str], found: Sequence[Hit | None], *, missing_ok: bool) -> list[Hit]:
    """``get``'s answer from what was found of each of ``ids`` (None: no live document): the
    hits in the order of ``ids``; an ``UnknownIdError`` naming the first id not found, unless
    ``missing_ok`` (then it is left out)."""
    hits = []
    for doc_id, hit in zip(ids, found, strict=True):
        if hit is not None:
            hits.append(hit)
        elif not missing_ok:
            raise UnknownIdError(
                f"document id {doc_id!r} is not in the index (in its last commit); pass "
                "missing_ok=True to leave unknown ids out"
            )
    return hits
