"""``benchmarks/reports/strategy_report.py`` on a few MED queries with a scripted generator: every
strategy is scored and timed, and a generator that writes the intended filter makes
self-query's figures those of the oracle filter."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "reports" / "strategy_report.py"


def load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("strategy_report", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["strategy_report"] = module
    spec.loader.exec_module(module)
    return module


def scripted(prompt: str) -> str:
    """Reads the rewritten query's "(a review from 2015)" back as the filter; writes the
    question as its passage, two sub-queries, and ENOUGH."""
    question = prompt.rsplit("Question:", 1)[-1]
    if "JSON filter" in prompt:
        found = re.search(r"\(a (\w+) from (\d{4})\)", question)
        return f'{{"type": "{found[1]}", "year": {found[2]}}}' if found else "{}"
    if "Search queries" in prompt:
        return " cell growth\n2. protein levels\n"
    if "Passages found" in prompt:
        return "ENOUGH"
    return question.split("\n")[0]


def test_report_with_a_scripted_generator(shared_data: Path) -> None:
    script = load_script()
    figures = script.report([shared_data / "beir" / "med"], scripted, 6, seed=1, threads=1)
    block = figures["med"]
    rows = block["strategies"]["strategies"]
    assert set(rows) == {"hybrid", "hyde", "decompose", "multi-hop", "fused-strategies"}
    for name, row in rows.items():
        assert 0.0 <= row["ndcg@10"] <= 1.0 and row["p95_ms"] >= row["p50_ms"] >= 0.0
        if name != "hybrid":
            assert 0.0 < row["ndcg@10_p"] <= 1.0
    # multi-hop stopped at once: its single hop, RRF-fused, ranks as the plain search
    assert rows["multi-hop"]["ndcg@10"] == pytest.approx(rows["hybrid"]["ndcg@10"])
    sq = block["self_query"]
    assert sq["queries"] == 6 and sq["valid_fraction"] == 1.0 and sq["intended_fraction"] == 1.0
    assert sq["rows"]["self-query"]["ndcg@10"] == pytest.approx(
        sq["rows"]["oracle filter"]["ndcg@10"]
    )
    assert sq["rows"]["self-query"]["recall@100"] == pytest.approx(
        sq["rows"]["oracle filter"]["recall@100"]
    )
