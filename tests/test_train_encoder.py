"""Bi-encoder fine-tuning: negative mining, batches, the validation gate, the CLI, and one
small end-to-end training (slow) that the gate scores against an independent recomputation.

Oracles: brute-force cosine and text comparison for the near-duplicate rule, a brute-force
clash check for the batches, the exact sign-flip p-value of a constructed case, numpy exact
kNN plus pytrec_eval for the gate's figures.
"""

import json
import re
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

from hybrid_engine.cli import main
from hybrid_engine.errors import HybridEngineError
from hybrid_engine.evaluation.datasets import load_beir
from hybrid_engine.evaluation.encoder_gate import encoder_verdict
from hybrid_engine.evaluation.runner import documents_with_text
from hybrid_engine.training.data import Pair
from hybrid_engine.training.encoder_data import (
    distinct_batches,
    draw_hard_negatives,
    near_duplicates,
    negative_pools,
)

SCIFACT = "beir/scifact"


def _corpus(n: int, dim: int, seed: int) -> tuple[np.ndarray, list[str]]:
    """Random unit vectors and distinct texts, with planted near-duplicates of document 0:
    1 (a tiny perturbation), 2 (the same text, other case and spacing, a distant vector)."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, dim)).astype(np.float32)
    vectors[1] = vectors[0] + 0.01 * rng.normal(size=dim).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [f"document number {i} about topic {i % 7}" for i in range(n)]
    texts[2] = "  DOCUMENT number 0\tabout topic 0 "
    return vectors, texts


def _brute_near_duplicate(c: int, positives: list[int], vectors, texts) -> bool:
    def cosine(a: int, b: int) -> float:
        x, y = vectors[a].astype(np.float64), vectors[b].astype(np.float64)
        return float(x @ y / np.sqrt((x @ x) * (y @ y)))

    def norm(text: str) -> str:
        return re.sub(r"\s+", " ", text).strip().lower()

    return any(cosine(c, p) > 0.95 or norm(texts[c]) == norm(texts[p]) for p in positives)


def test_near_duplicates_match_a_brute_force_check() -> None:
    vectors, texts = _corpus(60, 8, seed=0)
    rng = np.random.default_rng(1)
    for positives in ([0], [0, 5], [3, 9, 11], []):
        candidates = rng.permutation(60)[:40].astype(np.int64)
        candidates[:2] = [1, 2]
        got = near_duplicates(candidates, positives, vectors, texts)
        expected = [_brute_near_duplicate(int(c), positives, vectors, texts) for c in candidates]
        assert got.tolist() == expected
    assert near_duplicates(np.array([1, 2, 4]), [0], vectors, texts).tolist() == [
        True,
        True,
        False,
    ]


def test_negative_pools_drop_near_duplicates_in_pool_order() -> None:
    vectors, texts = _corpus(30, 8, seed=2)
    pair = Pair("q", texts[0], 0, frozenset({0, 7}), "qrels")
    pool = np.array([5, 1, 9, 2, 12], dtype=np.int64)  # the hybrid pool: positives already out
    (kept,) = negative_pools([pool], [pair], vectors, texts)
    expected = [c for c in pool.tolist() if not _brute_near_duplicate(c, [0, 7], vectors, texts)]
    assert kept.tolist() == expected and 1 not in expected and 2 not in expected


def test_hard_negatives_come_from_the_pool_or_else_never_a_duplicate() -> None:
    vectors, texts = _corpus(12, 8, seed=3)
    pairs = [
        Pair("a", texts[0], 0, frozenset({0}), "qrels"),
        Pair("b", texts[0], 0, frozenset({0, 4}), "qrels"),
    ]
    pools = [np.array([6, 8], dtype=np.int64), np.array([], dtype=np.int64)]
    drawn = [
        draw_hard_negatives(pools, pairs, vectors, texts, np.random.default_rng(s))
        for s in range(200)
    ]
    assert {d[0] for d in drawn} == {6, 8}
    allowed = {
        c
        for c in range(12)
        if c not in (0, 4) and not _brute_near_duplicate(c, [0, 4], vectors, texts)
    }
    assert {d[1] for d in drawn} == allowed  # uniform over the rest: every one turns up


def test_distinct_batches_never_share_a_query_or_a_document() -> None:
    rng = np.random.default_rng(4)
    queries = [f"q{int(rng.integers(25))}" for _ in range(120)]
    documents = [set(rng.integers(0, 200, size=3).tolist()) for _ in range(120)]
    batches = distinct_batches(queries, documents, 8, np.random.default_rng(0))
    assert sorted(i for b in batches for i in b) == list(range(120))
    for batch in batches:
        assert 1 <= len(batch) <= 8
        for x in batch:
            for y in batch:
                if x != y:
                    assert queries[x] != queries[y] and not documents[x] & documents[y]
    assert batches == distinct_batches(queries, documents, 8, np.random.default_rng(0))
    with pytest.raises(ValueError, match="batch_size"):
        distinct_batches(queries, documents, 0, np.random.default_rng(0))


def test_gate_accepts_a_consistent_gain_with_the_exact_p_value() -> None:
    # Five queries all gaining the same: of the 2^5 sign patterns only the identity reaches
    # the observed statistic, so the exact one-sided p-value is 1/32.
    base = {f"q{i}": 0.2 + 0.1 * i for i in range(5)}
    tuned = {q: v + 0.1 for q, v in base.items()}
    verdict = encoder_verdict(base, tuned)
    assert verdict.accepted and verdict.queries == 5
    assert verdict.gain == pytest.approx(0.1)
    assert verdict.p_value == pytest.approx(1 / 32, abs=0.006)
    assert not encoder_verdict(base, tuned, min_gain=0.12).accepted  # the gain must exceed it


def test_gate_refuses_a_worse_model_and_a_noisy_one() -> None:
    rng = np.random.default_rng(5)
    base = {f"q{i}": float(v) for i, v in enumerate(rng.uniform(0.2, 0.8, size=40))}
    worse = {q: v - 0.05 for q, v in base.items()}
    verdict = encoder_verdict(base, worse)
    assert not verdict.accepted and verdict.gain == pytest.approx(-0.05)
    assert verdict.p_value > 0.9
    # Gains of +-0.2 on alternate queries, mean +0.005: not significant.
    noisy = {q: v + (0.2 if i % 2 else -0.19) for i, (q, v) in enumerate(base.items())}
    verdict = encoder_verdict(base, noisy)
    assert verdict.gain > 0 and not verdict.accepted and verdict.p_value > 0.3
    with pytest.raises(ValueError, match="same, non-empty set"):
        encoder_verdict(base, {"other": 1.0})


def test_cli_refuses_the_test_split(tmp_path: Path, capsys) -> None:
    code = main(["train-encoder", str(tmp_path), "--out", str(tmp_path / "m"), "--split", "test"])
    assert code == 2
    err = capsys.readouterr().err
    assert "refusing to train a bi-encoder on the 'test' split" in err
    assert not (tmp_path / "m").exists()


def test_cli_refuses_an_existing_output(tmp_path: Path, capsys) -> None:
    (tmp_path / "m").mkdir()
    assert main(["train-encoder", str(tmp_path), "--out", str(tmp_path / "m")]) == 2
    assert "exists; choose a new --out folder" in capsys.readouterr().err


def test_cli_names_the_missing_extra(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "sentence_transformers", None)
    assert main(["train-encoder", str(tmp_path), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "training a bi-encoder needs 'sentence_transformers'" in err
    assert 'pip install -e ".[export]"' in err
    assert not (tmp_path / "m").exists()


def _with_training(model_path: Path, folder: Path, accepted: bool) -> Path:
    """A copy of the default model whose manifest carries a training verdict."""
    shutil.copytree(model_path, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["training"] = {
        "validation": {"accepted": accepted, "base": 0.6, "tuned": 0.5, "p_value": 0.9}
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_loading_a_refused_encoder_warns_and_an_accepted_one_does_not(
    model_path: Path, tmp_path: Path
) -> None:
    from hybrid_engine.models import Encoder, RefusedModelWarning

    refused = _with_training(model_path, tmp_path / "refused", accepted=False)
    with pytest.warns(RefusedModelWarning, match=r"REFUSED.*--force"):
        Encoder.load(refused, variant="int8")
    accepted = _with_training(model_path, tmp_path / "accepted", accepted=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Encoder.load(accepted, variant="int8")


def test_index_with_a_model_folder_records_it_for_load_and_search(
    model_path: Path, tmp_path: Path, capsys
) -> None:
    from hybrid_engine import HybridIndex

    folder = tmp_path / "elsewhere" / "my-encoder"
    shutil.copytree(model_path, folder)  # outside the models folder: found by its path
    corpus = tmp_path / "corpus.jsonl"
    docs = [
        {"_id": "a", "title": "Vitamin D", "text": "Vitamin D deficiency and bone loss."},
        {"_id": "b", "title": "Jazz", "text": "The history of jazz music in New Orleans."},
        {"_id": "c", "title": "Aspirin", "text": "Aspirin lowers the risk of heart attacks."},
    ]
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    out = tmp_path / "index"
    assert main(["index", str(corpus), str(out), "--model", str(folder), "--quiet"]) == 0
    engine = HybridIndex.load(out)
    assert engine.encoder is not None and engine.encoder.info.path == folder.resolve()
    assert main(["search", str(out), "bone health vitamin", "--json", "-k", "1"]) == 0
    hits = json.loads(capsys.readouterr().out.splitlines()[0])["hits"]
    assert hits[0]["id"] == "a"


def _slice(shared_data: Path, folder: Path, n_queries: int, n_docs: int) -> Path:
    """A small SciFact: the first ``n_queries`` training queries, their judged documents, and
    other documents up to ``n_docs``."""
    source = shared_data / SCIFACT
    rows = [line.rstrip("\n").split("\t") for line in open(source / "qrels" / "train.tsv")]
    header, rows = rows[0], rows[1:]
    chosen = sorted({r[0] for r in rows}, key=int)[:n_queries]
    kept = [r for r in rows if r[0] in chosen]
    judged = {r[1] for r in kept}
    corpus = [json.loads(line) for line in open(source / "corpus.jsonl")]
    others = [d for d in corpus if d["_id"] not in judged][: n_docs - len(judged)]
    (folder / "qrels").mkdir(parents=True)
    docs = [d for d in corpus if d["_id"] in judged] + others
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    queries = [json.loads(line) for line in open(source / "queries.jsonl")]
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in queries if q["_id"] in chosen)
    )
    (folder / "qrels" / "train.tsv").write_text(
        "".join("\t".join(r) + "\n" for r in [header, *kept])
    )
    return folder


def _independent_ndcg(dataset_dir: Path, model, validation_ids: list[str]) -> float:
    """Mean nDCG@10 of exact numpy kNN with ``model``, scored by pytrec_eval."""
    import pytrec_eval

    from hybrid_engine.corpus import document_text
    from hybrid_engine.evaluation.datasets import load_beir
    from hybrid_engine.evaluation.runner import documents_with_text

    dataset = load_beir(dataset_dir, "train")
    docs = documents_with_text(dataset)
    encode_document = getattr(model, "encode_document", model.encode)
    encode_query = getattr(model, "encode_query", model.encode)
    vectors = encode_document([document_text(d, i)[0] for i, d in enumerate(docs)])
    queries = encode_query([dataset.queries[q] for q in validation_ids])
    scores = queries @ vectors.T
    run = {
        q: {docs[j]["_id"]: float(scores[i, j]) for j in np.argsort(-scores[i])[:10]}
        for i, q in enumerate(validation_ids)
    }
    qrels = {q: dataset.qrels[q] for q in validation_ids}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return float(np.mean([per_query[q]["ndcg_cut_10"] for q in validation_ids]))


@pytest.mark.slow
def test_train_prepare_gate_and_refuse_a_bad_training(
    shared_data: Path, model_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An embedding cache of this test's own: the int8 graph's vectors depend a little on the
    # batch a text was encoded in (dynamic quantization), so base vectors cached by another
    # test's batches would not be the ones the reference below recomputes.
    monkeypatch.setenv("HYBRID_ENGINE_CACHE", str(tmp_path / "embedding-cache"))
    from hybrid_engine.models import Encoder, RefusedModelWarning
    from hybrid_engine.training.data import positives, split_queries
    from hybrid_engine.training.encoder_loop import EncoderSettings
    from hybrid_engine.training.encoder_trainer import EncoderRefusedError, train_encoder

    dataset = _slice(shared_data, tmp_path / "scifact", n_queries=60, n_docs=300)
    quick = EncoderSettings(max_seq_length=64, batch_size=16, lr=5e-5)
    prepared = train_encoder(
        dataset,
        tmp_path / "good",
        settings=quick,
        prepared_output=tmp_path / "models" / "good",
        force=True,  # prepared whatever the verdict, so that its figures can be checked
        show_progress=False,
        log=lambda message: None,
    )
    record = json.loads((tmp_path / "good" / "training.json").read_text())
    manifest = json.loads((prepared / "manifest.json").read_text())
    assert manifest["training"] == record and manifest["max_length"] == 64
    assert record["data"]["split"] == "train" and record["data"]["training_queries"] == 48
    assert record["settings"]["steps"] >= 3 and set(manifest["variants"]) == {"fp32", "int8"}
    validation = record["validation"]
    assert validation["queries"] == 12 and validation["variant"] == "int8"
    # The gate's figures, recomputed: the same held-out queries, exact kNN, pytrec_eval.
    from hybrid_engine.evaluation.datasets import load_beir
    from hybrid_engine.evaluation.runner import documents_with_text

    loaded = load_beir(dataset, "train")
    doc_ids = [d["_id"] for d in documents_with_text(loaded)]
    judged = positives(loaded.qrels, list(loaded.queries), doc_ids)
    _, held_out = split_queries(list(judged), 0.2, 0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RefusedModelWarning)
        tuned = Encoder.load(prepared, variant="int8")
    base = Encoder.load(model_path, variant="int8")
    assert validation["tuned"] == pytest.approx(
        _independent_ndcg(dataset, tuned, held_out), abs=1e-4
    )
    assert validation["base"] == pytest.approx(_independent_ndcg(dataset, base, held_out), abs=1e-4)
    assert validation["accepted"] == (
        validation["p_value"] < 0.05 and validation["tuned"] > validation["base"]
    )
    assert record["forced"] == (not validation["accepted"])

    # An absurd learning rate wrecks the model: refused, and nothing is prepared.
    with pytest.raises(EncoderRefusedError, match="refused the fine-tuned bi-encoder") as caught:
        train_encoder(
            dataset,
            tmp_path / "bad",
            settings=EncoderSettings(max_seq_length=64, batch_size=16, lr=1e-2, warmup=0.0),
            prepared_output=tmp_path / "models" / "bad",
            int8=False,
            show_progress=False,
            log=lambda message: None,
        )
    assert not caught.value.verdict.accepted and caught.value.verdict.gain < 0
    assert not (tmp_path / "models" / "bad").exists()
    bad = json.loads((tmp_path / "bad" / "training.json").read_text())
    assert bad["validation"]["accepted"] is False and bad["validation"]["variant"] == "fp32"
    assert bad["validation"]["tuned"] < bad["validation"]["base"]


def test_train_from_a_prepared_encoder_keeps_its_pooling_and_prefixes(
    shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiny_encoders import tiny_encoder

    from hybrid_engine.models import Encoder, RefusedModelWarning
    from hybrid_engine.models.export.bi_encoder import prepare_encoder
    from hybrid_engine.training.data import positives, split_queries
    from hybrid_engine.training.encoder_loop import EncoderSettings
    from hybrid_engine.training.encoder_trainer import train_encoder

    monkeypatch.setenv("HYBRID_ENGINE_CACHE", str(tmp_path / "embedding-cache"))
    prompts = {"query": "query: ", "passage": "passage: "}
    source = tiny_encoder(tmp_path / "tiny-e5", "bert", pooling="cls", prompts=prompts)
    base = prepare_encoder(source, tmp_path / "models" / "tiny-e5", int8=False)
    dataset = _slice(shared_data, tmp_path / "scifact", n_queries=40, n_docs=200)
    prepared = train_encoder(
        dataset,
        tmp_path / "tuned",
        base=base,
        settings=EncoderSettings(max_seq_length=64, batch_size=8, lr=1e-4),
        prepared_output=tmp_path / "models" / "tuned",
        int8=False,
        force=True,  # prepared whatever the verdict: its settings are what is checked
        show_progress=False,
        log=lambda message: None,
    )
    manifest = json.loads((prepared / "manifest.json").read_text())
    assert manifest["pooling"] == "cls" and manifest["normalize"] is True
    assert manifest["prefixes"] == {"query": "query: ", "document": "passage: "}
    record = manifest["training"]
    assert record["base_model"] == {"name": "tiny-e5", "path": str(base), "source": str(source)}
    loaded = load_beir(dataset, "train")
    doc_ids = [d["_id"] for d in documents_with_text(loaded)]
    judged = positives(loaded.qrels, list(loaded.queries), doc_ids)
    _, held_out = split_queries(list(judged), 0.2, 0)
    # The gate compared with the base model, prefixes applied: recomputed independently.
    expected = _independent_ndcg(dataset, Encoder.load(base, variant="fp32"), held_out)
    assert record["validation"]["base"] == pytest.approx(expected, abs=1e-4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RefusedModelWarning)
        tuned = Encoder.load(prepared, variant="fp32")
    assert tuned.query_prefix == "query: " and tuned.document_prefix == "passage: "


def test_export_reads_the_sentence_transformers_5_layout(tmp_path: Path) -> None:
    # How sentence-transformers 5 saves a fine-tuned model: the pooling mode by name and
    # max_seq_length as the tokenizer's model_max_length.
    from hybrid_engine.models.export import bi_encoder as prepare
    from hybrid_engine.models.export.encoder_source import read_settings

    modules = ["Transformer", "Pooling", "Normalize"]
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode": "mean"}))
    (tmp_path / "modules.json").write_text(json.dumps([{"type": f"x.{m}"} for m in modules]))
    (tmp_path / "sentence_bert_config.json").write_text(json.dumps({"transformer_task": "x"}))
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 128}))
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "bert", "hidden_size": 384, "num_attention_heads": 12})
    )
    settings = read_settings(tmp_path)
    assert (settings.max_length, settings.pooling, settings.normalize, settings.dim) == (
        128,
        "mean",
        True,
        384,
    )
    with pytest.raises(HybridEngineError, match="transformers cannot read"):
        prepare.prepare_encoder(tmp_path / "1_Pooling", tmp_path / "out", name="x")
    assert not (tmp_path / "out").exists()
