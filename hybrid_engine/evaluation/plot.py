"""The quality-versus-latency plot of ``hybrid-engine eval --plot`` and ``pick --plot``."""

from __future__ import annotations

import os
from collections.abc import Mapping

from hybrid_engine.errors import HybridEngineError

PLOT_EXTRA_HINT = 'pip install -e ".[plot]"  (matplotlib)'


def plot_quality_latency(
    rows: Mapping[str, Mapping[str, float]],
    path: str | os.PathLike[str],
    *,
    metric: str = "ndcg@10",
    latency: str = "p95_ms",
    title: str | None = None,
    budget_ms: float | None = None,
    chosen: str | None = None,
) -> None:
    """Write a PNG scatter plot: one labelled point per configuration, latency against quality.

    Parameters
    ----------
    rows : mapping of str to mapping of str to float
        ``hybrid-engine eval``'s figures: configuration name -> its row (``RetrieverReport.
        to_dict``).
    path : path-like
        The PNG file to write.
    metric : str
        The row key on the y axis.
    latency : str
        The row key on the x axis, milliseconds per query (log scale).
    title : str, optional
        The plot's title.
    budget_ms : float, optional
        A latency budget, drawn as a dashed vertical line at that many milliseconds
        (labelled at the foot of the plot).
    chosen : str, optional
        A row drawn as a star, e.g. the configuration ``pick`` recommends.

    Raises
    ------
    HybridEngineError
        matplotlib is not installed (the message gives the install command).
    KeyError
        A row lacks ``metric`` or ``latency``, or ``chosen`` is not a row.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display is needed or wanted
        import matplotlib.pyplot as plt
    except ImportError:
        raise HybridEngineError(f"the plot needs matplotlib: {PLOT_EXTRA_HINT}") from None
    points = {name: (row[latency], row[metric]) for name, row in rows.items()}
    if chosen is not None and chosen not in points:
        raise KeyError(f"chosen={chosen!r} is not one of the rows {sorted(points)}")
    figure, axes = plt.subplots(figsize=(6.4, 4.4), dpi=120)
    try:
        for i, (name, (x, y)) in enumerate(sorted(points.items(), key=lambda item: item[1])):
            star = name == chosen
            axes.scatter([x], [y], s=120 if star else 36, marker="*" if star else "o")
            # Neighbours in latency get their labels above and below in turn.
            offset = (5, 4) if i % 2 == 0 else (5, -12)
            axes.annotate(name, (x, y), textcoords="offset points", xytext=offset, fontsize=9)
        if budget_ms is not None:
            axes.axvline(budget_ms, color="tab:red", linestyle="--", linewidth=1)
            axes.annotate(
                f"budget {budget_ms:g} ms",
                (budget_ms, 0),
                xycoords=("data", "axes fraction"),
                xytext=(3, 4),
                textcoords="offset points",
                fontsize=8,
                color="tab:red",
            )
        axes.set_xscale("log")
        axes.set_xlabel(f"{latency.replace('_ms', '')} latency per query, ms (log scale)")
        axes.set_ylabel(metric)
        if title:
            axes.set_title(title)
        axes.grid(True, which="both", alpha=0.3)
        figure.tight_layout()
        figure.savefig(os.fspath(path), format="png")
    finally:
        plt.close(figure)
