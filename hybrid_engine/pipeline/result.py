"""What ``HybridIndex.search`` returns: the hits, each stage's time, the stages left out and
why, and the snapshot the documents are read from."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypeVar

import numpy as np

from hybrid_engine.live.snapshot import Snapshot
from hybrid_engine.pipeline.facets import Facets
from hybrid_engine.pipeline.highlight import Highlighted
from hybrid_engine.result import PAD_ID, Hit, SearchResult

_T = TypeVar("_T")


@dataclass(frozen=True)
class HybridResult(Highlighted, SearchResult):
    """A ``SearchResult`` plus the wall-clock milliseconds of each stage of the call.

    Attributes
    ----------
    timings : dict of str to float
        ``"bm25"``, ``"dense"`` and ``"splade"`` (query encoding included) for the legs used,
        ``"filter"``, ``"fusion"``, ``"rerank"`` and ``"mmr"`` (when used) and ``"total"``;
        a stage left out has none.
    degraded : list of str
        Stages left out because they failed (or their model was not loaded), in stage order:
        the result is fused from the other legs, or not reranked (docs/degradation.md).
    skipped : list of str
        Stages left out to keep ``budget_ms``: skipped before they started, or abandoned at
        their deadline.
    reasons : dict of str to str
        Why each stage of ``degraded`` and ``skipped`` was left out: ``"error: ..."``, ``"not
        loaded: ..."``, ``"budget"``, ``"timeout"``, ``"busy"`` (its abandoned call of an
        earlier search is still running), or the missing stage MMR needed.
    relevance : numpy.ndarray or None
        float32, the shape of ``scores``: each hit's fused score on the [0, 1] scale that
        ``min_score`` compares with (``relevance.SCALES``; the same for every fusion method),
        kept through reranking and MMR, which re-order by other scores; -inf on padding.
    relevance_scale : str
        How this search's fusion method maps onto that scale.
    facets : list of dict or None
        With ``search(facets=[...])``, per query, each field's ``(value, count)`` pairs over
        the documents the search matched (``facets``), most frequent first; else None.
    queries : list of str or None
        The query texts searched (what ``highlights`` marks).
    legs : dict of str to SearchResult or None
        Each leg's own ranking that was fused (its top ``depth``; what ``explain`` reads).

    ``ids`` and ``scores`` have ``min(k, live documents)`` columns (``SearchResult``). ``ids``
    are positions in the snapshot the search ran on; ``doc_ids`` and ``hits`` read the
    documents from that snapshot, whatever was committed since, once per result.
    """

    timings: dict[str, float] = field(default_factory=dict)
    snapshot: Snapshot | None = field(default=None, repr=False, compare=False)
    degraded: list[str] = field(default_factory=list, kw_only=True)
    skipped: list[str] = field(default_factory=list, kw_only=True)
    reasons: dict[str, str] = field(default_factory=dict, kw_only=True)
    relevance: np.ndarray | None = field(default=None, repr=False, compare=False, kw_only=True)
    relevance_scale: str = field(default="", kw_only=True)
    facets: list[Facets] | None = field(default=None, repr=False, compare=False, kw_only=True)
    queries: list[str] | None = field(default=None, repr=False, compare=False, kw_only=True)
    legs: dict[str, SearchResult] | None = field(
        default=None, repr=False, compare=False, kw_only=True
    )

    @cached_property
    def doc_ids(self) -> list[list[str]]:
        """The external ids of each query's hits, best first (padding left out).

        Gathered once, on first access, from the snapshot's packed ids (no Python call per
        hit); later accesses return the same lists (read them, do not change them).
        """
        hit = self.ids != PAD_ID
        return _rows(self._documents().doc_ids_at(self.ids[hit]), hit)

    def hits(self) -> list[list[Hit]]:
        """Each query's hits, best first: id, score, title, text and metadata.

        Read from the snapshot once, on the first call; each call returns new lists of the
        same ``Hit`` objects.
        """
        return [list(row) for row in self._hits]

    def explain(self) -> list[list[dict[str, tuple[int, float]]]]:
        """Each hit's place in each leg's own ranking, aligned with ``hits()``: ``{leg:
        (rank, score)}``, the rank 1-based, for the legs whose top ``depth`` held the hit
        (a leg that left it out, or failed, is absent): why a hit ranks where it does.

        Raises
        ------
        ValueError
            The result was not returned by ``HybridIndex.search``.
        """
        if self.legs is None:
            raise ValueError("this result was not returned by HybridIndex.search: no legs")
        return explain_rows(self.legs, [[int(i) for i in row if i != PAD_ID] for row in self.ids])

    def _highlighted(
        self,
    ) -> tuple[Sequence[str], list[list[str]], Callable[[str], list[str]]]:
        if self.queries is None:
            raise ValueError("this result was not returned by HybridIndex.search: no queries")
        texts = [[hit.text for hit in row] for row in self._hits]
        return self.queries, texts, self._documents().text_analyzer.analyze

    @cached_property
    def _hits(self) -> list[list[Hit]]:
        hit = self.ids != PAD_ID
        return _rows(self._documents().hits_at(self.ids[hit], self.scores[hit]), hit)

    def _documents(self) -> Snapshot:
        if self.snapshot is None:
            raise ValueError(
                "this result was not returned by HybridIndex.search: it has no documents"
            )
        return self.snapshot


def explain_rows(
    legs: dict[str, SearchResult], hits: list[list[int]]
) -> list[list[dict[str, tuple[int, float]]]]:
    """Each hit's place in each leg's own ranking (``HybridResult.explain``): ``hits`` are
    each query's hit ids, in the ids ``legs`` (one row per query) rank."""
    out = []
    for row, ids in enumerate(hits):
        places = {
            name: {
                int(i): (rank, float(score))
                for rank, (i, score) in enumerate(
                    zip(leg.ids[row], leg.scores[row], strict=True), 1
                )
                if i != PAD_ID
            }
            for name, leg in legs.items()
        }
        out.append([{name: found[i] for name, found in places.items() if i in found} for i in ids])
    return out


def _rows(items: list[_T], hit: np.ndarray) -> list[list[_T]]:
    """``items`` (one per True of ``hit``, row after row) cut into the rows of ``hit``."""
    ends = np.cumsum(hit.sum(axis=1)).tolist()
    return [items[start:end] for start, end in zip([0, *ends][:-1], ends, strict=True)]
