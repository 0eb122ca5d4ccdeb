"""Cross-encoder reranking of the top hits of a ``SearchResult``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from hybrid_engine.checks import check_queries
from hybrid_engine.protocols import PairScorer
from hybrid_engine.result import PAD_ID, SearchResult

RERANK_DEPTH = 30
"""Hits per query a cross-encoder rescores by default: the fused top 30 (measured on SciFact:
see docs/)."""
BLEND_RRF_K = 60
"""The k of the weighted reciprocal-rank blend (as in RRF)."""


def rerank(
    result: SearchResult,
    queries: Sequence[str] | np.ndarray,
    doc_texts: Sequence[str] | np.ndarray,
    cross_encoder: PairScorer,
    *,
    depth: int = RERANK_DEPTH,
    blend: float | None = None,
) -> SearchResult:
    """Re-order the top ``depth`` hits of each query by a cross-encoder.

    Parameters
    ----------
    result : SearchResult
        The incoming ranking (fused, say): ids are positions into ``doc_texts``, ``-1`` pads.
    queries : sequence of str or 1-d numpy array of str
        The query text of each row of ``result``.
    doc_texts : sequence of str or 1-d numpy array of str
        The passage text of each corpus position (what the cross-encoder reads), e.g.
        ``HybridIndex.texts``; only the passages of the reranked hits are read.
    cross_encoder : CrossEncoder
        Any object with ``score(queries, passages) -> float32 (n,)``; called once, with the
        pairs of every row.
    depth : int
        Hits per row given to the cross-encoder (the first ``depth`` of the row, fewer where
        the row has fewer hits). The hits after them keep their incoming order, after them.
    blend : float, optional
        None: the reranked hits are ordered by the cross-encoder score alone, and the returned
        score of each is its cross-encoder score; the hits below ``depth`` get
        ``min(reranked scores) - j`` for the j-th of them (j = 1, 2, ...).
        A weight ``w`` in [0, 1]: a weighted reciprocal-rank blend of the cross-encoder rank
        and the incoming rank (both 1-based; the cross-encoder rank among the reranked hits of
        the row), ``score = w / (60 + rank_ce) + (1 - w) / (60 + rank_in)``; the hits below
        ``depth`` get ``1 / (60 + rank_in)``, as if both rankings agreed there. ``w = 1``
        orders by the cross-encoder alone, ``w = 0`` keeps the incoming order.

    Returns
    -------
    SearchResult
        Same shape and padding as ``result``; rows sorted by score descending (float32), the
        hits below ``depth`` strictly below the reranked ones. Equal scores keep the incoming
        order.

    Raises
    ------
    ValueError
        ``len(queries) != len(result)``, ``depth < 1``, ``blend`` outside [0, 1].
    TypeError
        Queries that are not a batch of str (``checks.check_queries``).
    IndexError
        An id outside ``doc_texts``.

    Notes
    -----
    Thread-safe when ``cross_encoder.score`` is (``CrossEncoder``'s is).
    """
    depth = _check_depth(depth)
    weight = check_blend(blend)
    queries = check_queries(queries)
    if len(queries) != len(result):
        raise ValueError(
            f"got {len(queries)} queries for a result of {len(result)} rows; give the query "
            "text of each row"
        )
    ids = result.ids
    n_hits = (ids != PAD_ID).sum(axis=1)
    heads = np.minimum(n_hits, depth)
    pair_queries: list[str] = []
    pair_passages: list[str] = []
    for row, head in enumerate(heads):
        for position in ids[row, :head]:
            if not 0 <= position < len(doc_texts):
                raise IndexError(
                    f"result row {row} holds id {position}, outside doc_texts of "
                    f"{len(doc_texts)} texts; give the texts of the corpus the result is over"
                )
            pair_queries.append(queries[row])
            pair_passages.append(str(doc_texts[int(position)]))
    ce_scores = (
        np.asarray(cross_encoder.score(pair_queries, pair_passages), dtype=np.float64)
        if pair_passages
        else np.empty(0)
    )
    if ce_scores.shape != (len(pair_passages),):
        raise ValueError(
            f"the cross-encoder returned shape {ce_scores.shape} for {len(pair_passages)} pairs"
        )
    out_ids = np.full_like(ids, PAD_ID)
    out_scores = np.full(ids.shape, -np.inf, np.float32)
    start = 0
    for row, (head, hits) in enumerate(zip(heads, n_hits, strict=True)):
        scores = ce_scores[start : start + head]
        start += head
        order, head_scores = _order_head(scores, weight)
        tail_ranks = np.arange(head + 1, hits + 1, dtype=np.float64)
        if weight is None:
            floor = head_scores[-1] if head else 0.0
            tail_scores = floor - (tail_ranks - head)
        else:
            tail_scores = 1.0 / (BLEND_RRF_K + tail_ranks)
        out_ids[row, :head] = ids[row, :head][order]
        out_ids[row, head:hits] = ids[row, head:hits]
        out_scores[row, :hits] = np.concatenate([head_scores, tail_scores])
    return SearchResult(out_ids, out_scores)


@dataclass(frozen=True)
class RerankerVerdict:
    """How an engine may use a cross-encoder, from its training record's validation verdict.

    Attributes
    ----------
    use : bool
        False when validation refused it: the engine serves the fused ranking instead.
    blend : float or None
        The blend weight validation chose (``rerank``'s ``blend``), None for the plain
        cross-encoder order.
    message : str
        One line saying what was decided and why.
    variant, max_length : str, int or None
        The configuration validation scored (``CrossEncoder.load`` defaults to it); None when
        the record does not say (a model validated before the gate recorded it).
    """

    use: bool
    blend: float | None
    message: str
    variant: str | None = None
    max_length: int | None = None


def reranker_verdict(name: str, training: Mapping[str, Any] | None) -> RerankerVerdict:
    """The verdict of ``training["validation"]`` (the record ``hybrid-engine train-reranker``
    writes: ``accepted``, ``mode``, ``blend_weight``, ``fused``, ``best``, and the served
    ``variant`` and ``max_length`` with the ``p_value`` of its paired test when recorded).

    A model without a training record (one prepared from a folder the engine did not train)
    is used as given, in plain cross-encoder order: check it on data of your own with
    ``hybrid_engine.evaluation.gate.validate_reranker``.

    Raises
    ------
    ValueError
        A validation record that lacks those fields.
    """
    if training is None or "validation" not in training:
        return RerankerVerdict(True, None, f"{name}: no validation record; used as given")
    record = training["validation"]
    try:
        accepted, mode = bool(record["accepted"]), str(record["mode"])
        fused, best = float(record["fused"]), float(record["best"])
        weight = None if record["blend_weight"] is None else float(record["blend_weight"])
        variant = None if record.get("variant") is None else str(record["variant"])
        max_length = None if record.get("max_length") is None else int(record["max_length"])
        p_value = None if record.get("p_value") is None else float(record["p_value"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{name}: unreadable validation record ({exc!r})") from None
    scored = f" ({variant}, {max_length} tokens per pair)" if variant is not None else ""
    evidence = f", p={p_value:.4f}" if p_value is not None else ""
    if not accepted:
        return RerankerVerdict(
            False,
            None,
            f"{name} did not beat the fused ranking on its validation queries{scored} (nDCG@10 "
            f"fused {fused:.4f}, best {best:.4f}{evidence}); serving the fused ranking",
            variant,
            max_length,
        )
    how = f"blend weight {weight}" if mode == "blend" else "cross-encoder order"
    return RerankerVerdict(
        True,
        weight if mode == "blend" else None,
        f"{name}: validation nDCG@10 {best:.4f} against fused {fused:.4f}{evidence}{scored}; {how}",
        variant,
        max_length,
    )


def _order_head(scores: np.ndarray, weight: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Order of the reranked hits (positions in the incoming head) and their scores."""
    by_ce = np.argsort(-scores, kind="stable")
    if weight is None:
        return by_ce, scores[by_ce]
    ce_rank = np.empty(len(scores), np.float64)
    ce_rank[by_ce] = np.arange(1, len(scores) + 1)
    in_rank = np.arange(1, len(scores) + 1, dtype=np.float64)
    blended = weight / (BLEND_RRF_K + ce_rank) + (1.0 - weight) / (BLEND_RRF_K + in_rank)
    # Ties keep the incoming order; compare in float32, the precision returned.
    order = np.argsort(-blended.astype(np.float32), kind="stable")
    return order, blended[order]


def _check_depth(depth: int) -> int:
    if isinstance(depth, bool) or not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"depth must be a positive int, got {depth!r}")
    return int(depth)


def check_blend(blend: float | None) -> float | None:
    """``rerank``'s ``blend``: None or a weight in [0, 1] (ValueError otherwise)."""
    if blend is None:
        return None
    if isinstance(blend, bool) or not isinstance(blend, (int, float)) or not 0 <= blend <= 1:
        raise ValueError(f"blend must be None or a weight in [0, 1], got {blend!r}")
    return float(blend)
