"""What ``HybridIndex.search`` returns: the hits, each stage's time, the stages left out and
why, and the snapshot the documents are read from."""

from __future__ import annotations

from dataclasses import dataclass, field

from hybrid_engine.live.snapshot import Hit, Snapshot
from hybrid_engine.results import PAD_ID, SearchResult


@dataclass(frozen=True)
class HybridResult(SearchResult):
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

    ``ids`` are positions in the snapshot the search ran on; ``doc_ids`` and ``hits`` read
    the documents from that snapshot, whatever was committed since.
    """

    timings: dict[str, float] = field(default_factory=dict)
    snapshot: Snapshot | None = field(default=None, repr=False, compare=False)
    degraded: list[str] = field(default_factory=list, kw_only=True)
    skipped: list[str] = field(default_factory=list, kw_only=True)
    reasons: dict[str, str] = field(default_factory=dict, kw_only=True)

    @property
    def doc_ids(self) -> list[list[str]]:
        """The external ids of each query's hits, best first (padding left out)."""
        snapshot = self._documents()
        return [[snapshot.doc_id(int(i)) for i in row if i != PAD_ID] for row in self.ids]

    def hits(self) -> list[list[Hit]]:
        """Each query's hits, best first: id, score, title, text and metadata."""
        snapshot = self._documents()
        return [
            [
                snapshot.hit(int(i), float(s))
                for i, s in zip(row, scores, strict=True)
                if i != PAD_ID
            ]
            for row, scores in zip(self.ids, self.scores, strict=True)
        ]

    def _documents(self) -> Snapshot:
        if self.snapshot is None:
            raise ValueError(
                "this result was not returned by HybridIndex.search: it has no documents"
            )
        return self.snapshot
