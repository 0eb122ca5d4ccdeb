"""The strategy configurations of ``hybrid-engine eval`` with a scripted generator: scored,
timed with their generation, plotted; a generator that writes nothing gives ``hybrid``'s
figures; ``--max-queries`` scores a seeded sample."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hybrid_engine.cli import main
from hybrid_engine.evaluation import Dataset, load_beir, sample_queries
from hybrid_engine.evaluation.metrics import evaluate, run_from_results
from hybrid_engine.evaluation.plot import plot_quality_latency
from hybrid_engine.evaluation.runner import (
    GENERATIVE,
    RETRIEVERS,
    BuildOptions,
    build_hybrid,
    evaluate_retriever,
    parse_retrievers,
)
from hybrid_engine.result import SearchResult

WORDS = "cat dog fish bird mat sun moon tree river stone cloud rain wind fire snow".split()


def toy() -> Dataset:
    corpus = [
        {
            "_id": f"d{i}",
            "title": WORDS[i % 15],
            "text": " ".join(WORDS[(i * 7 + j) % 15] for j in range(5 + i // 15)),
        }
        for i in range(30)
    ]
    queries = {"q1": "cat on the mat", "q2": "river stone", "q3": "fire and snow"}
    qrels = {"q1": {"d0": 1}, "q2": {"d8": 1}, "q3": {"d13": 1, "d4": 1}}
    return Dataset("toy", corpus, queries, qrels)


def test_the_strategies_are_configurations_and_self_query_is_not() -> None:
    assert set(GENERATIVE) <= set(RETRIEVERS) and "self-query" not in RETRIEVERS
    assert parse_retrievers("hyde,multi-hop") == ["hyde", "multi-hop"]


def per_query_hybrid(dataset: Dataset, metrics: list[str]) -> dict[str, float]:
    """``hybrid`` searched one query per call, as the strategies search (the int8 encoder's
    dynamic quantization makes a batch's vectors differ a little from single queries')."""
    engine = build_hybrid(dataset, 1)
    ids = list(dataset.queries)
    rows = [engine.search([dataset.queries[q]], 100, depth=100) for q in ids]
    result = SearchResult(
        np.concatenate([r.ids for r in rows]), np.concatenate([r.scores for r in rows])
    )
    run = run_from_results(result.ids, result.scores, ids, engine.doc_ids)
    return evaluate(run, dataset.qrels, metrics)


def test_silent_generator_scores_as_hybrid(tmp_path: Path) -> None:
    calls: list[str] = []

    def silent(prompt: str) -> str:
        calls.append(prompt)
        return ""

    options = BuildOptions(generator=silent, num_threads=1)
    dataset = toy()
    metrics = ["ndcg@10", "recall@100"]
    build_hybrid(dataset, 1)  # fills the embedding cache: every engine below reads its vectors
    hybrid = per_query_hybrid(dataset, metrics)
    rows = {}
    for name in ("hyde", "decompose", "multi-hop"):
        report = evaluate_retriever(dataset, name, metrics=metrics, options=options)
        # nothing generated: HyDE searches the query's embedding, decompose and multi-hop the
        # query alone (RRF of one list keeps its order)
        assert report.metrics == pytest.approx(hybrid)
        assert {"total", "generation", "retrieval"} <= set(report.latency_ms)
        rows[name] = report.to_dict()
    assert calls  # the generator was asked
    rows["fused-strategies"] = evaluate_retriever(
        dataset, "fused-strategies", metrics=metrics, options=options
    ).to_dict()
    assert rows["fused-strategies"]["ndcg@10"] == pytest.approx(hybrid["ndcg@10"])
    assert all("generation_p95_ms" in row for row in rows.values())
    plot = tmp_path / "ablation.png"
    plot_quality_latency(rows, plot)  # the plot takes them with their latency, generation in
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_a_seeded_sample_of_queries(shared_data: Path) -> None:
    dataset = load_beir(shared_data / "beir" / "scifact")
    first, again = sample_queries(dataset, 7, seed=3), sample_queries(dataset, 7, seed=3)
    assert list(first.queries) == list(again.queries) and len(first.queries) == 7
    assert set(first.queries) <= set(dataset.queries) and set(first.qrels) == set(first.queries)
    order = [q for q in dataset.queries if q in first.queries]
    assert list(first.queries) == order
    assert sample_queries(dataset, None) is dataset
    with pytest.raises(ValueError, match=">= 1"):
        sample_queries(dataset, 0)


def test_eval_max_queries(shared_data: Path, tmp_path: Path, capsys) -> None:
    figures = tmp_path / "eval.json"
    args = ["eval", str(shared_data / "beir" / "scifact"), "--max-queries", "5", "--quiet"]
    assert main([*args, "--json", str(figures)]) == 0
    assert "test: 5 queries" in capsys.readouterr().out
    assert "bm25" in json.loads(figures.read_text())


def test_other_configurations_never_import_llama_cpp() -> None:
    code = (
        "import sys; from hybrid_engine.evaluation.runner import RETRIEVERS; "
        "import hybrid_engine.cli.eval; print('llama_cpp' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
