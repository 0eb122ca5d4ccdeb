"""Fusion weights tuned on a training split: a grid over the BM25 / dense weight."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hybrid_engine.evaluation.datasets import Dataset
from hybrid_engine.evaluation.metrics import evaluate, run_from_results
from hybrid_engine.evaluation.runner import build_hybrid
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD, fuse
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH

FORBIDDEN_SPLITS = ("test",)
"""Splits ``tune_weights`` refuses: tuning on the split that is reported is not evaluation."""


def check_tuning_split(split: str) -> None:
    """ValueError when ``split`` is one of ``FORBIDDEN_SPLITS``."""
    if split in FORBIDDEN_SPLITS:
        raise ValueError(
            f"refusing to tune on the {split!r} split: tune on a training split (e.g. "
            "--split train) and report on test"
        )


@dataclass(frozen=True)
class TuningResult:
    """The grid and its best point.

    Attributes
    ----------
    weights : tuple of float
        The best (BM25, dense) weights.
    score : float
        Their nDCG@10 on the tuning split.
    grid : list of (tuple of float, float)
        Every (weights, nDCG@10) tried, in order.
    """

    weights: tuple[float, float]
    score: float
    grid: list[tuple[tuple[float, float], float]]


def tune_weights(
    dataset: Dataset,
    *,
    method: str = DEFAULT_METHOD,
    steps: int = 11,
    depth: int = DEFAULT_DEPTH,
    show_progress: bool = False,
) -> TuningResult:
    """nDCG@10 of BM25 + dense fused with weights ``(w, 1 - w)`` for ``steps`` values of ``w``
    from 0 to 1, on ``dataset``'s split; the best wins (ties: the one nearest equal weights).

    Raises
    ------
    ValueError
        ``dataset`` is a test split (tune on train, report on test), or ``steps < 2``.
    """
    check_tuning_split(dataset.split)
    if steps < 2:
        raise ValueError(f"steps must be at least 2, got {steps}")
    engine = build_hybrid(dataset, show_progress=show_progress)
    assert engine.bm25 is not None and engine.dense is not None
    query_ids = list(dataset.queries)
    texts = [dataset.queries[q] for q in query_ids]
    legs = [engine.bm25.search(texts, depth), engine.dense.search(texts, depth)]
    grid: list[tuple[tuple[float, float], float]] = []
    for w in np.linspace(0.0, 1.0, steps):
        weights = (round(float(w), 6), round(1.0 - float(w), 6))
        fused = fuse(legs, 10, method=method, weights=weights, depth=depth)
        run = run_from_results(fused.ids, fused.scores, query_ids, engine.doc_ids)
        grid.append((weights, evaluate(run, dataset.qrels, ["ndcg@10"])["ndcg@10"]))
    best = max(grid, key=lambda point: (point[1], -abs(point[0][0] - 0.5)))
    return TuningResult(best[0], best[1], grid)


def format_grid(result: TuningResult, names: Sequence[str] = ("bm25", "dense")) -> str:
    """The grid as lines ``w_bm25 w_dense nDCG@10``, the best marked with ``*``."""
    lines = [f"{names[0]:>8} {names[1]:>8}  ndcg@10"]
    for weights, score in result.grid:
        mark = " *" if weights == result.weights else ""
        lines.append(f"{weights[0]:>8.2f} {weights[1]:>8.2f}  {score:.4f}{mark}")
    return "\n".join(lines)
