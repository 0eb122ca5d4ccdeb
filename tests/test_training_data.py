"""Reranker training data: validation split, labelled and self-supervised pairs, negatives."""

import numpy as np
import pytest

from hybrid_engine.training import train_encoder, train_reranker
from hybrid_engine.training.data import (
    Pair,
    candidate_pools,
    check_training_split,
    draw_negatives,
    positives,
    qrels_pairs,
    self_supervised_pairs,
    split_queries,
    split_sentences,
)
from hybrid_engine.training.run import output_folders


def test_test_split_refused_before_anything_loads(tmp_path) -> None:
    with pytest.raises(ValueError, match="refusing to train a reranker on the 'test' split"):
        check_training_split("test")
    check_training_split("train")
    # The trainer refuses it first: no dataset at this path, no PyTorch needed.
    with pytest.raises(ValueError, match="--split train"):
        train_reranker(tmp_path / "absent", tmp_path / "out", split="test")


@pytest.mark.parametrize(
    ("train", "what"), [(train_reranker, "a reranker"), (train_encoder, "a bi-encoder")]
)
def test_both_trainers_check_their_data_and_folders_before_anything_loads(
    tmp_path, train, what
) -> None:
    data, out = tmp_path / "absent", tmp_path / "out"
    with pytest.raises(ValueError, match=f"refusing to train {what} on the 'test' split"):
        train(data, out, split="test", supervision=("bm25",))  # the split is checked first
    with pytest.raises(ValueError, match=r"supervision must be a non-empty subset of \('qrels'"):
        train(data, out, supervision=(), validation_fraction=1.0)
    with pytest.raises(ValueError, match=r"validation_fraction must be in \(0, 1\), got 1.0"):
        train(data, out, validation_fraction=1.0)
    prepared = tmp_path / "prepared"
    prepared.mkdir()
    (prepared / "manifest.json").write_text("{}")
    with pytest.raises(FileExistsError, match="holds a prepared model"):
        train(data, out, prepared_output=prepared)
    out.mkdir()
    with pytest.raises(FileExistsError, match="out exists; choose a new output folder"):
        train(data, out, prepared_output=prepared)


def test_negative_mode_is_checked_after_supervision_and_before_the_fraction(tmp_path) -> None:
    data, out = tmp_path / "absent", tmp_path / "out"
    with pytest.raises(ValueError, match="negative_mode must be one of"):
        train_reranker(data, out, negative_mode="hardest", validation_fraction=1.0)
    with pytest.raises(ValueError, match="supervision"):
        train_reranker(data, out, supervision=("bm25",), negative_mode="hardest")


def test_output_folders_default_to_the_models_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HYBRID_ENGINE_MODELS", str(tmp_path / "models"))
    out, prepared = output_folders(str(tmp_path / "m"), None)
    assert (out, prepared) == (tmp_path / "m", tmp_path / "models" / "m")
    held = tmp_path / "held"
    held.mkdir()
    (held / "manifest.json").write_text("{}")
    assert output_folders(out, held, check_prepared=False) == (out, held)
    with pytest.raises(FileExistsError, match="holds a prepared model"):
        output_folders(out, held)


def test_validation_split_disjoint_deterministic_and_order_free() -> None:
    ids = [f"q{i}" for i in range(50)]
    train, validation = split_queries(ids, 0.2, seed=3)
    assert len(validation) == 10 and len(train) == 40
    assert set(train).isdisjoint(validation) and set(train) | set(validation) == set(ids)
    assert split_queries(ids, 0.2, seed=3) == (train, validation)
    # The same ids in another order hold out the same queries.
    shuffled = list(reversed(ids))
    assert set(split_queries(shuffled, 0.2, seed=3)[1]) == set(validation)
    assert set(split_queries(ids, 0.2, seed=4)[1]) != set(validation)
    assert split_queries(["a", "b"], 0.01, seed=0)[1] != []  # at least one held out
    with pytest.raises(ValueError, match=r"\[0, 1\)"):
        split_queries(ids, 1.0, seed=0)


def test_positives_and_qrels_pairs() -> None:
    qrels = {"q1": {"b": 1, "a": 2, "gone": 1}, "q2": {"c": 0}, "q3": {"gone": 1}}
    judged = positives(qrels, ["q1", "q2", "q3"], ["a", "b", "c"])
    assert judged == {"q1": [0, 1]}  # grade 0 and documents absent from the corpus dropped
    pairs = qrels_pairs({"q1": "query one"}, judged, ["A", "B", "C"])
    assert [(p.query, p.passage, p.source, p.kind) for p in pairs] == [
        ("query one", "A", 0, "qrels"),
        ("query one", "B", 1, "qrels"),
    ]
    assert all(p.excluded == frozenset({0, 1}) for p in pairs)


def test_self_supervised_pairs_by_hand() -> None:
    corpus = [
        {
            "title": "Vitamin D and bone health",
            "text": "Short one. Vitamin D regulates calcium absorption in the gut. "
            "It is made in the skin under sunlight.",
        },
        {"title": "Too short", "text": "Only one sentence here, so no sentence pair at all."},
    ]
    assert split_sentences(corpus[0]["text"]) == [
        "Short one.",
        "Vitamin D regulates calcium absorption in the gut.",
        "It is made in the skin under sunlight.",
    ]
    pairs = self_supervised_pairs(corpus, seed=0)
    title_pair, sentence_pair = pairs  # document 1: title too short, too few sentences
    assert title_pair == Pair(
        "Vitamin D and bone health", corpus[0]["text"], 0, frozenset({0}), "title"
    )
    assert sentence_pair.kind == "sentence" and sentence_pair.source == 0
    # "Short one." is under 6 words: one of the other two is the query, the rest the passage.
    expected = {
        "Vitamin D regulates calcium absorption in the gut.": "Vitamin D and bone health "
        "Short one. It is made in the skin under sunlight.",
        "It is made in the skin under sunlight.": "Vitamin D and bone health Short one. "
        "Vitamin D regulates calcium absorption in the gut.",
    }
    assert expected[sentence_pair.query] == sentence_pair.passage
    assert self_supervised_pairs(corpus, seed=0) == pairs
    assert len(self_supervised_pairs(corpus, seed=0, limit=1)) == 1


def test_hard_negatives_exclude_positives() -> None:
    pairs = [Pair("q", "p", 2, frozenset({2, 5}), "qrels")]
    ranked = np.array([[5, 1, 2, 7, -1]], dtype=np.int64)
    (pool,) = candidate_pools(ranked, pairs)
    assert pool.tolist() == [1, 7]  # positives 5 and 2 and the padding removed
    rng = np.random.default_rng(0)
    for mode in ("hard", "random", "mix"):
        for _ in range(20):
            drawn = draw_negatives(pool, pairs[0].excluded, 3, mode, 10, rng)
            assert len(set(drawn)) == 3 and not set(drawn) & {2, 5}
    # "hard" takes the whole pool before filling up at random.
    assert {1, 7} <= set(draw_negatives(pool, pairs[0].excluded, 3, "hard", 10, rng))
    with pytest.raises(ValueError, match="lower negatives"):
        draw_negatives(pool, frozenset({0, 1}), 3, "hard", 4, rng)
    with pytest.raises(ValueError, match="unknown negatives mode"):
        draw_negatives(pool, frozenset(), 1, "easy", 10, rng)
