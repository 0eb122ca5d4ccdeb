"""The quality-versus-latency PNG of ``hybrid-engine eval --plot``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid_engine.cli import main
from hybrid_engine.evaluation.plot import plot_quality_latency

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_writes_a_png(tmp_path: Path) -> None:
    rows = {"bm25": {"ndcg@10": 0.68, "p95_ms": 0.04}, "hybrid": {"ndcg@10": 0.74, "p95_ms": 11}}
    out = tmp_path / "plot.png"
    plot_quality_latency(rows, out, title="t")
    assert out.read_bytes().startswith(PNG_SIGNATURE)


def test_a_row_without_the_figures_is_a_key_error(tmp_path: Path) -> None:
    with pytest.raises(KeyError, match="p95_ms"):
        plot_quality_latency({"bm25": {"ndcg@10": 0.5}}, tmp_path / "plot.png")


def test_eval_writes_the_plot_next_to_the_json(shared_data: Path, tmp_path: Path) -> None:
    plot, figures = tmp_path / "eval.png", tmp_path / "eval.json"
    dataset = shared_data / "beir" / "cranfield"
    args = ["eval", str(dataset), "--json", str(figures), "--plot", str(plot), "--quiet"]
    assert main(args) == 0
    assert "bm25" in json.loads(figures.read_text())
    assert plot.read_bytes().startswith(PNG_SIGNATURE)
