"""Fusion weight tuning: refuses the test split; the grid's ends are the single retrievers."""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_engine import BM25Index
from hybrid_engine.cli import main
from hybrid_engine.evaluation import evaluate, load_beir, run_from_results
from hybrid_engine.evaluation.tuning import tune_weights


def test_test_split_is_refused(shared_data: Path, capsys) -> None:
    folder = shared_data / "beir" / "scifact"
    assert main(["tune", str(folder), "--split", "test"]) == 2
    assert "refusing to tune on the 'test' split" in capsys.readouterr().err
    with pytest.raises(ValueError, match="refusing"):
        tune_weights(load_beir(folder, "test"))


@pytest.mark.slow
def test_grid_on_scifact_train(shared_data: Path, encoder, tmp_path: Path) -> None:
    train = load_beir(shared_data / "beir" / "scifact", "train")
    result = tune_weights(train, steps=3)
    assert [w for w, _ in result.grid] == [(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)]
    assert result.score == max(score for _, score in result.grid)
    # All weight on BM25: the fused top 10 is BM25's own (other candidates add nothing).
    bm25 = BM25Index.build(train.corpus)
    query_ids = list(train.queries)
    found = bm25.search([train.queries[q] for q in query_ids], 10)
    run = run_from_results(found.ids, found.scores, query_ids, bm25.doc_ids)
    expected = evaluate(run, train.qrels, ["ndcg@10"])["ndcg@10"]
    assert result.grid[-1][1] == pytest.approx(expected, abs=1e-9)
    out = tmp_path / "tune.json"
    assert (
        main(
            [
                "tune",
                str(shared_data / "beir" / "scifact"),
                "--steps",
                "3",
                "--quiet",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    assert out.is_file()
