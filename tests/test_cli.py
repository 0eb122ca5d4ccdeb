"""The hybrid-engine command line, run in-process through its ``main``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hybrid_engine import BM25Index
from hybrid_engine.cli import main
from hybrid_engine.cli._output import print_eval_tables, print_table
from hybrid_engine.cli.demo import DEFAULT_DATASET


@pytest.fixture
def corpus_file(tmp_path: Path) -> Path:
    docs = [
        {"_id": "d1", "title": "Cats", "text": "The cat sat on the mat."},
        {"_id": "d2", "title": "Dogs", "text": "A dog chased the cat."},
        {"_id": "d3", "title": "Birds", "text": "Birds fly over the sea."},
    ]
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def parse_table(text: str, first_column: str = "retriever") -> dict[str, list[str]]:
    """The table in ``text`` whose header starts with ``first_column``: the header's cells
    under ``""``, then each row's cells by its name; stops at the first blank line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [first_column])
    assert set(lines[start + 1]) == {"-"} and len(lines[start + 1]) == len(lines[start])
    table = {"": lines[start].split()[1:]}
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        assert len(line) == len(lines[start]), "cells are not aligned under the header"
        name, *cells = line.split()
        table[name] = cells
    return table


def test_print_table(capsys) -> None:
    rows = {
        "bm25": {"ndcg@10": 0.67891, "queries_per_s": 1234.56, "p50_ms": 1.234},
        "dense": {"ndcg@10": 0.5, "p50_ms": 12.5},
    }
    print_table(rows)
    assert parse_table(capsys.readouterr().out) == {
        "": ["ndcg@10", "queries_per_s", "p50_ms"],
        "bm25": ["0.6789", "1234.6", "1.23"],
        "dense": ["0.5000", "-", "12.50"],
    }


def test_print_eval_tables_puts_stages_in_a_second_table(capsys) -> None:
    rows = {
        "bm25": {"ndcg@10": 0.25, "p50_ms": 1.0},
        "hybrid": {"ndcg@10": 0.5, "p50_ms": 9.0, "dense_p50_ms": 7.0, "fusion_p50_ms": 0.25},
    }
    print_eval_tables(rows)
    out = capsys.readouterr().out
    main_table, stage_table = out.split("per-stage latency")
    assert parse_table(main_table) == {
        "": ["ndcg@10", "p50_ms"],
        "bm25": ["0.2500", "1.00"],
        "hybrid": ["0.5000", "9.00"],
    }
    assert parse_table(stage_table) == {
        "": ["dense_p50_ms", "fusion_p50_ms"],
        "hybrid": ["7.00", "0.25"],
    }


def test_default_dataset_is_scifact_beside_the_checkout() -> None:
    assert DEFAULT_DATASET == Path(__file__).resolve().parents[2] / "shared/data/beir/scifact"


def test_index_then_search_prints_ids(corpus_file: Path, tmp_path: Path, capsys) -> None:
    index_dir = tmp_path / "idx"
    assert main(["index", str(corpus_file), str(index_dir), "--quiet"]) == 0
    assert BM25Index.load(index_dir).num_documents == 3
    assert main(["search", str(index_dir), "dog", "-k", "2", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing[0]["query"] == "dog"
    assert [hit["id"] for hit in listing[0]["hits"]] == ["d2"]


def test_index_options_are_recorded(corpus_file: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "idx"
    argv = ["index", str(corpus_file), str(index_dir), "--quiet", "--k1", "1.2", "--b", "0.75"]
    assert main([*argv, "--method", "atire", "--stemmer", "none", "--no-stopwords"]) == 0
    index = BM25Index.load(index_dir)
    assert (index.params.k1, index.params.b, index.params.method) == (1.2, 0.75, "atire")
    assert index.analyzer.stemmer == "none" and not index.analyzer.stopwords


def test_errors_exit_2_with_a_message(tmp_path: Path, capsys) -> None:
    assert main(["search", str(tmp_path / "missing"), "query"]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["eval", str(tmp_path), "--retriever", "nope"]) == 2
    assert "error" in capsys.readouterr().err


def test_train_reranker_refuses_the_test_split_before_loading(tmp_path: Path, capsys) -> None:
    argv = ["train-reranker", str(tmp_path / "absent"), "--split", "test", "--out", "m"]
    assert main(argv) == 2
    assert "refusing to train a reranker on the 'test' split" in capsys.readouterr().err


def test_eval_writes_the_json_shape(shared_data: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "eval.json"
    dataset = shared_data / "beir" / "cranfield"
    assert main(["eval", str(dataset), "--retriever", "bm25", "--json", str(out), "--quiet"]) == 0
    figures = json.loads(out.read_text())
    assert list(figures) == ["bm25"]
    assert set(figures["bm25"]) == {
        "ndcg@10",
        "recall@100",
        "mrr@10",
        "map@100",
        "hit_rate@1",
        "hit_rate@5",
        "queries_per_s",
        "p50_ms",
        "p95_ms",
    }
    assert 0.3 < figures["bm25"]["ndcg@10"] < 0.4  # bm25s gives 0.352 with the same settings
    assert "ndcg@10" in capsys.readouterr().out


def test_demo_prints_hits_and_table(shared_data: Path, capsys) -> None:
    assert main(["demo", str(shared_data / "beir" / "scifact"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "query: Vitamin D deficiency" in out
    assert "bm25" in out and "ndcg@10" in out
    assert "== bm25 ==" in out and "== dense ==" in out


def test_eval_bm25_dense_and_hybrid_together(shared_data: Path, tmp_path: Path, model_path) -> None:
    """All rows in one JSON; the dense corpus embeddings come from the cache after the demo."""
    out = tmp_path / "eval.json"
    dataset = shared_data / "beir" / "scifact"
    retrievers = "bm25,dense,hybrid"
    args = ["eval", str(dataset), "--retriever", retrievers, "--json", str(out), "--quiet"]
    assert main(args) == 0
    figures = json.loads(out.read_text())
    assert list(figures) == ["bm25", "dense", "hybrid"]
    assert set(figures["dense"]) == set(figures["bm25"])
    stages = {f"{stage}_{q}_ms" for stage in ("bm25", "dense", "fusion") for q in ("p50", "p95")}
    assert set(figures["hybrid"]) == set(figures["bm25"]) | stages
    assert figures["hybrid"]["dense_p50_ms"] <= figures["hybrid"]["p50_ms"]
    assert figures["bm25"]["ndcg@10"] == pytest.approx(0.676, abs=0.002)  # bm25s: 0.676
    assert figures["dense"]["ndcg@10"] == pytest.approx(0.645, abs=0.005)  # MTEB: 0.645


def test_eval_rerank_needs_a_reranker(shared_data: Path, capsys) -> None:
    dataset = shared_data / "beir" / "med"
    assert main(["eval", str(dataset), "--retriever", "rerank", "--quiet"]) == 2
    assert "needs a cross-encoder: give --reranker" in capsys.readouterr().err


def test_eval_rerank_row_has_the_rerank_stage(
    shared_data: Path, tmp_path: Path, model_path, cross_encoder_path: Path
) -> None:
    out = tmp_path / "eval.json"
    args = ["eval", str(shared_data / "beir" / "med"), "--retriever", "hybrid,rerank"]
    args += ["--reranker", str(cross_encoder_path), "--rerank-max-length", "64"]
    assert main([*args, "--json", str(out), "--quiet"]) == 0
    figures = json.loads(out.read_text())
    assert set(figures["rerank"]) == set(figures["hybrid"]) | {"rerank_p50_ms", "rerank_p95_ms"}
    # The same fused candidates, re-ordered: recall@100 counts the same documents.
    assert figures["rerank"]["recall@100"] == pytest.approx(figures["hybrid"]["recall@100"])
