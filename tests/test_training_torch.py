"""Reranker training with PyTorch on a tiny random BERT (seconds): loss, trainer, record.

Needs the export extra (PyTorch, transformers, the weights package for its tokenizer): absent,
the tests fail under CI and skip elsewhere, as the model fixtures of conftest do.
"""

import json
from pathlib import Path

import pytest

from hybrid_engine.training import TRAINING_RECORD, train_reranker
from hybrid_engine.training.loop import distillation_loss, listwise_loss


def test_listwise_loss_decreases_on_a_fixed_batch(tiny_bert_source: Path) -> None:
    import torch

    from hybrid_engine.training.model import load_base

    model, tokenizer = load_base(tiny_bert_source, max_length=32)
    queries = ["vitamin d and bones"] * 3 + ["aspirin and the heart"] * 3
    passages = ["vitamin d builds bone", "the stock market", "jazz music"] * 1 + [
        "aspirin lowers heart attack risk",
        "football results",
        "a recipe for bread",
    ]
    batch = tokenizer(queries, passages, padding=True, return_tensors="pt")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)  # tiny random model
    losses = []
    model.train()
    for _ in range(15):
        loss = listwise_loss(model(**batch).logits.view(2, 3))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[0] == pytest.approx(float(torch.log(torch.tensor(3.0))), abs=0.2)
    assert losses[-1] < 0.5 * losses[0]


def test_distillation_loss_is_the_kl_divergence_of_the_group_softmaxes() -> None:
    import numpy as np
    import torch

    rng = np.random.default_rng(3)
    student = rng.normal(size=(4, 5))
    teacher = rng.normal(size=(4, 5)) * 3
    p = np.exp(teacher) / np.exp(teacher).sum(axis=1, keepdims=True)
    q = np.exp(student) / np.exp(student).sum(axis=1, keepdims=True)
    expected = float(np.mean(np.sum(p * np.log(p / q), axis=1)))  # KL(teacher || student)
    got = distillation_loss(torch.tensor(student), torch.tensor(teacher)).item()
    assert got == pytest.approx(expected, rel=1e-9)
    assert distillation_loss(torch.tensor(teacher), torch.tensor(teacher)).item() == (
        pytest.approx(0.0, abs=1e-12)
    )
    # A shift of a row changes no softmax, so no loss.
    shifted = torch.tensor(teacher + 7.0)
    assert distillation_loss(shifted, torch.tensor(teacher)).item() == pytest.approx(0.0, abs=1e-9)


def test_a_distilled_student_learns_its_teachers_order(tiny_cross_encoder_source: Path) -> None:
    import torch

    from hybrid_engine.training.model import load_base, load_teacher

    teacher = load_teacher(tiny_cross_encoder_source)
    assert not any(p.requires_grad for p in teacher.parameters())
    # The student is the teacher's first layer (of two) with its head: how a shallower
    # reranker starts (train-reranker --source TEACHER --layers 1 --teacher TEACHER).
    student, tokenizer = load_base(tiny_cross_encoder_source, max_length=32, layers=1)
    queries = ["vitamin d and bones"] * 4 + ["aspirin and the heart"] * 4
    passages = ["vitamin d", "stock market", "jazz", "bread"] * 2
    batch = tokenizer(queries, passages, padding=True, return_tensors="pt")
    with torch.no_grad():
        taught = teacher(**batch).logits.view(2, 4)
    optimizer = torch.optim.AdamW(student.parameters(), lr=2e-3)
    student.eval()  # no dropout: a deterministic run
    losses = []
    for _ in range(60):
        loss = distillation_loss(student(**batch).logits.view(2, 4), taught)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < 0.05 * losses[0]
    with torch.no_grad():
        learned = student(**batch).logits.view(2, 4)
    # The oracle is the teacher's own ranking: its top two per group (where its probability
    # mass is) come back in its order.
    top = taught.argsort(dim=1, descending=True)[:, :2]
    assert torch.equal(learned.argsort(dim=1, descending=True)[:, :2], top)


def test_load_teacher_refuses_a_model_of_several_labels(tmp_path: Path) -> None:
    import transformers

    config = transformers.BertConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        num_labels=3,
    )
    transformers.BertForSequenceClassification(config).save_pretrained(tmp_path / "three")
    from hybrid_engine.training.model import load_teacher

    with pytest.raises(ValueError, match="has 3 labels"):
        load_teacher(tmp_path / "three")


def test_load_base_keeps_the_first_layers(tiny_bert_source: Path) -> None:
    import torch

    from hybrid_engine.training.model import load_base

    full, tokenizer = load_base(tiny_bert_source, max_length=32)
    cut, _ = load_base(tiny_bert_source, max_length=32, layers=1)
    assert full.config.num_hidden_layers == 2
    assert cut.config.num_hidden_layers == 1 and len(cut.bert.encoder.layer) == 1
    # The kept layer is the base's first: the cut body's output is the full body's
    # first hidden state (the oracle: hidden_states[1] of the uncut model).
    batch = tokenizer(["vitamin d"], ["bones and vitamin d"], return_tensors="pt")
    full.eval()
    cut.eval()
    with torch.no_grad():
        hidden = full.bert(**batch, output_hidden_states=True).hidden_states[1]
        torch.testing.assert_close(cut.bert(**batch).last_hidden_state, hidden)
    for bad in (0, 3):
        with pytest.raises(ValueError, match=r"layers must be in \[1, 2\]"):
            load_base(tiny_bert_source, max_length=32, layers=bad)


def _write_beir(folder: Path) -> None:
    topics = ["vitamin", "aspirin", "insulin", "gene", "virus", "protein", "neuron", "lung"]
    (folder / "qrels").mkdir(parents=True)
    docs, queries, qrels = [], [], ["query-id\tcorpus-id\tscore"]
    for i, topic in enumerate(topics):
        for j in range(3):
            text = f"The {topic} study number {j}. It reports {topic} effects in {j + 2} trials."
            docs.append(
                {"_id": f"d{i}-{j}", "title": f"A {topic} report, number {j}", "text": text}
            )
        queries.append({"_id": f"q{i}", "text": f"what does {topic} do"})
        qrels.append(f"q{i}\td{i}-0\t1")
    lines = [json.dumps(doc) for doc in docs]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    lines = [json.dumps(query) for query in queries]
    (folder / "queries.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "qrels" / "train.tsv").write_text("\n".join(qrels) + "\n", encoding="utf-8")


@pytest.mark.slow  # indexing, a few training steps, validation and an ONNX export
def test_train_reranker_writes_model_and_record(
    tiny_bert_source: Path, model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_ENGINE_CACHE", str(tmp_path / "cache"))
    _write_beir(tmp_path / "tiny")
    out = tmp_path / "model"
    messages: list[str] = []
    prepared = train_reranker(
        tmp_path / "tiny",
        out,
        supervision=("qrels", "self"),
        validation_fraction=0.25,
        negatives=2,
        epochs=1,
        batch_size=4,
        max_length=48,
        layers=1,
        num_threads=1,
        source=tiny_bert_source,
        prepared_output=tmp_path / "prepared",
        int8=False,
        show_progress=False,
        log=messages.append,
    )
    record = json.loads((out / TRAINING_RECORD).read_text())
    data = record["data"]
    assert data["split"] == "train" and data["validation_queries"] == 2
    assert data["training_queries"] == 6 and data["pairs"]["qrels"] == 6
    assert data["pairs"]["title"] > 0 and data["negatives"] == 2
    validation = record["validation"]
    assert validation["queries"] == 2 and not validation["accepted"]  # 2 queries prove no gain
    assert validation["p_value"] >= 0.25 and validation["best"] == validation["fused"]
    # The gate scored the prepared ONNX model as served: fp32 (no int8 made), 48 tokens.
    assert (validation["variant"], validation["max_length"]) == ("fp32", 48)
    assert record["settings"]["max_length"] == 48 and record["seed"] == 0
    assert record["settings"]["layers"] == 1
    assert json.loads((out / "config.json").read_text())["num_hidden_layers"] == 1
    assert {"torch", "transformers", "hybrid_engine"} <= set(record["versions"])
    assert any(m.startswith("validation ndcg@10 over 2 queries") for m in messages)
    tokenizer = json.loads((out / "tokenizer.json").read_text())
    assert tokenizer["padding"] is None and tokenizer["truncation"]["max_length"] == 48
    assert (out / "config.json").is_file() and (out / "model.safetensors").is_file()
    # The prepared ONNX folder carries the record, and scores as the PyTorch model does.
    from hybrid_engine.models.cross_encoder import CrossEncoder

    assert prepared == tmp_path / "prepared"
    cross_encoder = CrossEncoder.load(prepared)
    assert cross_encoder.training == record
    assert (cross_encoder.variant, cross_encoder.max_length) == ("fp32", 48)
    assert cross_encoder.score(["what does gene do"], ["The gene study."]).shape == (1,)
    with pytest.raises(FileExistsError, match="exists"):
        train_reranker(tmp_path / "tiny", out, source=tiny_bert_source)
    with pytest.raises(FileExistsError, match="holds a prepared model"):
        train_reranker(tmp_path / "tiny", tmp_path / "new", prepared_output=prepared)
