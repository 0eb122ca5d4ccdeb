"""``hybrid-engine eval``'s feedback configurations: ``bm25+rm3`` finds a relevant document
that shares no term with the query but many with the top hit (what RM3 is for), where plain
``bm25`` cannot; the names are known to the CLI's parser, and tables fit long names."""

from __future__ import annotations

import pytest

from hybrid_engine.cli._output import print_table
from hybrid_engine.evaluation import Dataset
from hybrid_engine.evaluation.runner import evaluate_retriever, parse_retrievers

FILLER = ["alpha beta", "gamma delta", "epsilon zeta", "theta iota", "kappa lambda", "mu nu"]


def expansion_dataset() -> Dataset:
    corpus = [
        {"_id": "a", "title": "", "text": "quasar pulsar nebula magnetar"},
        {"_id": "b", "title": "", "text": "pulsar nebula magnetar"},
    ] + [{"_id": f"f{i}", "title": "", "text": f"{FILLER[i % 6]} word{i}"} for i in range(40)]
    return Dataset("toy", corpus, {"q": "quasar"}, {"q": {"a": 1, "b": 1}})


def test_rm3_reaches_a_document_without_the_query_term() -> None:
    dataset = expansion_dataset()
    plain = evaluate_retriever(dataset, "bm25", metrics=["recall@10"]).metrics["recall@10"]
    rm3 = evaluate_retriever(dataset, "bm25+rm3", metrics=["recall@10"]).metrics["recall@10"]
    assert plain == 0.5  # only "a" holds "quasar"
    assert rm3 == 1.0


def test_the_feedback_names_parse() -> None:
    names = "bm25+rm3,dense+rocchio,hybrid+rm3"
    assert parse_retrievers(names) == names.split(",")


def test_a_table_widens_for_long_names(capsys: pytest.CaptureFixture[str]) -> None:
    print_table({"bm25": {"ndcg@10": 0.5}, "a-very-long-retriever-name": {"ndcg@10": 0.25}})
    lines = capsys.readouterr().out.splitlines()
    assert len({len(line) for line in lines}) == 1  # header, rule and rows line up
    assert lines[-1].split() == ["a-very-long-retriever-name", "0.2500"]
