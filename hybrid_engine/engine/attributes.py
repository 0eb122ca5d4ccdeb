"""What a ``HybridIndex`` shows of itself: its reranker and the gate's verdict, the last
commit's texts, ids, documents by id and segments, the retrievers and, for an index of one
segment, its legs."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from hybrid_engine.corpus import DocIds
from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.lexical.index import BM25Index
from hybrid_engine.live.segment import Segment
from hybrid_engine.live.snapshot import Snapshot
from hybrid_engine.live.state import LiveState
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.packed import PackedStrings
from hybrid_engine.pipeline.degradation import Health
from hybrid_engine.pipeline.rerank import RerankerVerdict
from hybrid_engine.protocols import TextEncoder
from hybrid_engine.result import Hit
from hybrid_engine.sparse.index import SpladeIndex


class EngineAttributes:
    """The read-only properties of ``HybridIndex``, and its reads of documents by id."""

    _state: LiveState
    _reranker: CrossEncoder | None
    _verdict: RerankerVerdict | None
    _health: Health
    _unloaded: dict[str, str]
    _pinned: Snapshot | None

    @property
    def _snapshot(self) -> Snapshot:
        """The commit reads and searches see: the pinned one (``pinned``), else the newest."""
        return self._state.snapshot if self._pinned is None else self._pinned

    @property
    def degraded(self) -> tuple[str, ...]:
        """The legs ``load(allow_degraded=True)`` left out because their model is missing or
        damaged (empty for a whole engine); every search lists them in its ``degraded``."""
        return tuple(self._unloaded)

    @property
    def degradations(self) -> dict[str, int]:
        """Searches served without each stage because it failed or was not loaded, by stage
        (``HybridResult.degraded``). Thread-safe; counted from this engine's creation."""
        return self._health.degradations

    @property
    def budget_skips(self) -> dict[str, int]:
        """Searches that skipped each stage to keep their ``budget_ms``, by stage
        (``HybridResult.skipped``)."""
        return self._health.skips

    @property
    def stage_costs(self) -> dict[str, float]:
        """The running estimate of each stage's milliseconds per unit (a query; a reranked
        pair for ``"rerank"``) that ``budget_ms`` plans with (``costs.StageCosts``)."""
        return self._health.costs.per_unit()

    @property
    def reranker(self) -> CrossEncoder | None:
        """The cross-encoder given, refused or not (see ``reranker_verdict``)."""
        return self._reranker

    @property
    def reranker_verdict(self) -> RerankerVerdict | None:
        """The gate's decision about ``reranker``: used or not, the blend, and why."""
        return self._verdict

    @property
    def encoder(self) -> TextEncoder | None:
        """The dense leg's query encoder (None without the dense leg)."""
        return self._state.encoder

    @property
    def texts(self) -> PackedStrings:
        """The text of every position (title and text), as the cross-encoder reads it
        (deleted documents keep their positions until a merge)."""
        return self._snapshot.texts

    @property
    def titles(self) -> PackedStrings:
        """The title of every position, ``""`` where it has none."""
        return self._snapshot.titles

    @property
    def models(self) -> dict[str, dict[str, str] | None]:
        """The prepared model each model leg runs, as the index records it for ``load``:
        ``{"dense": {"name", "variant"}, "splade": {...}}``; None for an encoder of your
        own; a leg without a model (BM25) is absent."""
        return dict(self._state.config.models)

    @property
    def retrievers(self) -> tuple[str, ...]:
        """The retrievers this index combines."""
        return self._state.config.retrievers

    @property
    def bm25(self) -> BM25Index | None:
        """The BM25 leg of an index of one segment without deletions (``merge`` first)."""
        return self._only_segment().bm25

    @property
    def dense(self) -> DenseIndex | None:
        """The dense leg of an index of one segment without deletions (``merge`` first)."""
        return self._only_segment().dense

    @property
    def splade(self) -> SpladeIndex | None:
        """The SPLADE leg of an index of one segment without deletions (``merge`` first)."""
        return self._only_segment().splade

    @property
    def doc_ids(self) -> DocIds:
        """The ``_id`` of every position of the last commit (deleted documents keep their
        positions until a merge; results never hold them)."""
        return self._snapshot.doc_ids

    def get(self, ids: Iterable[str | int], *, missing_ok: bool = False) -> list[Hit]:
        """The documents of the last commit with these ids, in the order of ``ids``.

        Parameters
        ----------
        ids : iterable of str or int
            Document ids (``ids.check_ids``: an ``int`` is its decimal string); an id given
            twice comes back twice. Staged documents (added or
            upserted since the last commit) are not seen, as searches do not see them.
        missing_ok : bool
            Leave out the ids no live document has, instead of raising.

        Returns
        -------
        list of Hit
            One per id found: its id, title, text and metadata as a search hit has them, and
            ``score`` NaN: a ``get`` is no search, and NaN cannot pass for a search's score.

        Raises
        ------
        UnknownIdError
            A ``KeyError`` naming the first id not in the last commit, unless ``missing_ok``.
        TypeError, ValueError
            ``ids`` is a single id (wrap it in a list), or holds something that is no id
            (``ids.check_id``).

        Notes
        -----
        Thread-safe: every id is read from the one commit that was the last when the call
        started. The first call after a commit maps every live id once (one pass over them).
        """
        return self._snapshot.get(ids, missing_ok=missing_ok)

    @property
    def num_segments(self) -> int:
        """Segments of the last commit."""
        return len(self._snapshot.segments)

    @property
    def generation(self) -> int:
        """The number of the last commit (``commit-N.json`` of the index directory; counted
        in memory for an engine never saved, 0 before its first commit)."""
        return self._state.generation

    @property
    def path(self) -> Path | None:
        """The index directory this engine commits to (None: in memory only)."""
        return self._state.path

    def __len__(self) -> int:
        """Live documents of the last commit."""
        return self._snapshot.num_live

    def __repr__(self) -> str:
        return (
            f"HybridIndex({len(self)} documents, {self.num_segments} segment(s), "
            f"retrievers={list(self.retrievers)})"
        )

    def _only_segment(self) -> Segment:
        snapshot = self._snapshot
        if len(snapshot.segments) != 1 or snapshot.live[0] is not None:
            raise ValueError(
                f"the index has {len(snapshot.segments)} segment(s) and deletions may be "
                "pending in them, so no single leg holds it; call merge() first, or search "
                "through HybridIndex.search"
            )
        return snapshot.segments[0]
