"""The ONNX cross-encoder against the PyTorch model it was exported from, and its contract.

The model is all-MiniLM-L6-v2's layers with a seeded random one-logit head (``conftest``),
prepared once per session; the references are PyTorch's ``AutoModelForSequenceClassification``
on pairs assembled here with transformers' own tokenizer.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import CROSS_ENCODER_TRAINING

from hybrid_engine.errors import IndexFormatError
from hybrid_engine.models import cross_encoder as cross_encoder_module
from hybrid_engine.models import session as session_module
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.cross_encoder import QUERY_MAX_TOKENS, CrossEncoder
from hybrid_engine.models.store import ModelNotFoundError, read_model

torch = pytest.importorskip("torch", reason="the export extra is not installed")
transformers = pytest.importorskip("transformers", reason="the export extra is not installed")

LONG_QUERY = "Does vitamin D supplementation in early life prevent multiple sclerosis? " * 12


@pytest.fixture(scope="module")
def model(cross_encoder_path: Path) -> CrossEncoder:
    return CrossEncoder.load(cross_encoder_path)


@pytest.fixture(scope="module")
def reference(cross_encoder_source: Path):  # type: ignore[no-untyped-def]
    """(tokenizer, model) of the source folder in PyTorch."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(cross_encoder_source))
    net = transformers.AutoModelForSequenceClassification.from_pretrained(
        str(cross_encoder_source)
    ).eval()
    return tokenizer, net


@pytest.fixture(scope="module")
def scifact_pairs(shared_data: Path) -> tuple[list[str], list[str]]:
    """24 real (claim, abstract) pairs of SciFact test: each claim with a relevant abstract
    and an unrelated one (many abstracts are past 256 tokens)."""
    folder = shared_data / "beir" / "scifact"
    with open(folder / "queries.jsonl", encoding="utf-8") as f:
        queries = {q["_id"]: q["text"] for q in map(json.loads, f)}
    with open(folder / "corpus.jsonl", encoding="utf-8") as f:
        docs = {d["_id"]: f"{d['title']} {d['text']}".strip() for d in map(json.loads, f)}
    with open(folder / "qrels" / "test.tsv", encoding="utf-8") as f:
        qrels = [line.split("\t")[:2] for line in f.read().splitlines()[1:]]
    doc_ids = list(docs)
    pair_queries, passages = [], []
    for n, (query_id, doc_id) in enumerate(qrels[:12]):
        pair_queries += [queries[query_id]] * 2
        passages += [docs[doc_id], docs[doc_ids[(n * 211) % len(doc_ids)]]]
    return pair_queries, passages


def _torch_scores(
    reference, queries: list[str], passages: list[str], max_length: int, types: bool = True
) -> np.ndarray:
    """PyTorch logits of pairs built as documented: the query's first tokens (at most 64 and
    half the room), the passage's first tokens filling ``max_length`` with the 3 specials."""
    tokenizer, net = reference
    query_room = min(QUERY_MAX_TOKENS, (max_length - 3) // 2)
    scores = []
    for query, passage in zip(queries, passages):
        q = tokenizer(query, add_special_tokens=False)["input_ids"][:query_room]
        p = tokenizer(passage, add_special_tokens=False)["input_ids"][: max_length - 3 - len(q)]
        ids = [tokenizer.cls_token_id, *q, tokenizer.sep_token_id, *p, tokenizer.sep_token_id]
        token_types = [0] * (len(q) + 2) + [1] * (len(p) + 1)
        with torch.inference_mode():
            logits = net(
                input_ids=torch.tensor([ids]),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                token_type_ids=torch.tensor([token_types if types else [0] * len(ids)]),
            ).logits
        scores.append(float(logits[0, 0]))
    return np.array(scores)


@pytest.mark.parametrize("max_length", [512, 128])
def test_fp32_matches_pytorch(cross_encoder_path: Path, reference, scifact_pairs, max_length):
    queries, passages = scifact_pairs
    ours = CrossEncoder.load(cross_encoder_path, max_length=max_length).score(queries, passages)
    expected = _torch_scores(reference, queries, passages, max_length)
    assert ours.dtype == np.float32 and ours.shape == (len(passages),)
    assert expected.std() > 0.5  # the scores spread: the comparison means something
    np.testing.assert_allclose(ours, expected, rtol=1e-4, atol=1e-4)


def test_int8_stays_close(cross_encoder_path: Path, model: CrossEncoder, scifact_pairs) -> None:
    queries, passages = scifact_pairs
    fp32 = model.score(queries, passages)
    int8 = CrossEncoder.load(cross_encoder_path, variant="int8").score(queries, passages)
    ranks = [np.argsort(np.argsort(s)) for s in (fp32, int8)]
    spearman = np.corrcoef(*ranks)[0, 1]
    diff = np.abs(fp32 - int8) / fp32.std()
    print(f"\nint8 vs fp32: Spearman {spearman:.4f}, |diff| / std", end=" ")
    print(f"mean {diff.mean():.3f} max {diff.max():.3f}")
    # The random head (weights of std 2) magnifies the quantization error of the layers.
    assert spearman > 0.9
    assert diff.mean() < 0.25 and diff.max() < 0.75


def test_token_types_are_used(model: CrossEncoder, reference, scifact_pairs) -> None:
    """Without the passage's token type 1, PyTorch scores differ far beyond the tolerance."""
    queries, passages = (texts[:8] for texts in scifact_pairs)
    ours = model.score(queries, passages)
    without_types = _torch_scores(reference, queries, passages, model.max_length, types=False)
    assert np.abs(ours - without_types).max() > 0.05


def test_grouping_and_order_do_not_change_scores(
    model: CrossEncoder, scifact_pairs, monkeypatch
) -> None:
    queries, passages = (texts[:12] for texts in scifact_pairs)
    alone = np.array([model.score([q], [p])[0] for q, p in zip(queries, passages)])
    np.testing.assert_allclose(model.score(queries, passages), alone, atol=2e-5)
    permutation = np.random.default_rng(0).permutation(len(queries))
    shuffled = model.score([queries[i] for i in permutation], [passages[i] for i in permutation])
    np.testing.assert_allclose(shuffled, alone[permutation], atol=2e-5)
    for tokens in (1, 600):
        monkeypatch.setattr(cross_encoder_module, "TOKENS_PER_RUN", tokens)
        np.testing.assert_allclose(model.score(queries, passages), alone, atol=2e-5)
    for chunk in (1, 5):  # chunks of 5, 5 and 2 pairs, each sorted by its own lengths
        monkeypatch.setattr(cross_encoder_module, "PAIRS_PER_CHUNK", chunk)
        np.testing.assert_allclose(model.score(queries, passages), alone, atol=2e-5)
        np.testing.assert_allclose(
            model.score([queries[i] for i in permutation], [passages[i] for i in permutation]),
            alone[permutation],
            atol=2e-5,
        )


def test_concurrent_scores_run_at_most_cores_per_thread_model_calls_at_once(
    cross_encoder_path: Path, scifact_pairs, monkeypatch
) -> None:
    """Eight threads scoring through a session of one intra-op thread on a machine of two
    cores: at most two model calls run at once (``session.run_slots``), and every thread gets
    the scores it would alone."""
    monkeypatch.setattr(session_module, "default_threads", lambda: 2)
    encoder = CrossEncoder.load(cross_encoder_path, num_threads=1)
    queries, passages = scifact_pairs
    alone = encoder.score(queries[:6], passages[:6])
    session, lock, running, most = encoder._session, threading.Lock(), [0], [0]

    class Counting:
        def run(self, *args):  # type: ignore[no-untyped-def]
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            try:
                time.sleep(0.01)  # lets the other threads reach their call meanwhile
                return session.run(*args)
            finally:
                with lock:
                    running[0] -= 1

    monkeypatch.setattr(encoder, "_session", Counting())
    monkeypatch.setattr(cross_encoder_module, "PAIRS_PER_CHUNK", 1)  # one call per pair
    with ThreadPoolExecutor(8) as pool:
        scores = list(pool.map(lambda _: encoder.score(queries[:6], passages[:6]), range(8)))
    for got in scores:
        np.testing.assert_allclose(got, alone, atol=2e-5)
    assert 1 <= most[0] <= 2


def test_one_query_for_every_passage(model: CrossEncoder, scifact_pairs) -> None:
    queries, passages = scifact_pairs
    np.testing.assert_array_equal(
        model.score(queries[0], passages[:4]), model.score([queries[0]] * 4, passages[:4])
    )


def test_long_passage_scores_as_its_truncated_tokens(model: CrossEncoder, reference) -> None:
    tokenizer = reference[0]
    query = "Macrophages regulate inflammation in adipose tissue."
    sentence = "Adipose tissue macrophages drive insulin resistance in obese mice. "
    huge = sentence * 2000
    room = 128 - 3 - len(tokenizer(query, add_special_tokens=False)["input_ids"])
    kept = tokenizer.decode(tokenizer(huge, add_special_tokens=False)["input_ids"][:room])
    short = CrossEncoder.load(model.info.path, max_length=128)
    np.testing.assert_allclose(short.score(query, [huge]), short.score(query, [kept]), atol=1e-5)
    [pair] = short.encode_pairs([query], [huge])
    assert len(pair.ids) == 128 and pair.type_ids.count(1) == room + 1


@pytest.mark.parametrize("max_length", [512, 64, 24])
def test_passages_tokenized_from_a_prefix_equal_whole_ones_truncated(
    model: CrossEncoder, reference, scifact_pairs, max_length: int
) -> None:
    """The prefix shortcut (``_passage_tokens``) against the transformers tokenizer on whole
    passages: real abstracts, one long word (a prefix too short: the whole passage is read),
    words without spaces, and text shorter than the room."""
    tokenizer = reference[0]
    query = "Macrophages regulate inflammation in adipose tissue."
    passages = [
        *scifact_pairs[1][:8],
        "x" * 5000 + " tail words here",
        "supercalifragilistic" * 300,
        "短文本没有空格" * 200,
        "short passage",
    ]
    loaded = CrossEncoder.load(model.info.path, max_length=max_length)
    room = (
        max_length
        - 3
        - min(len(tokenizer(query, add_special_tokens=False)["input_ids"]), loaded.query_max_tokens)
    )
    for passage, pair in zip(passages, loaded.encode_pairs([query] * len(passages), passages)):
        whole = tokenizer(passage, add_special_tokens=False)["input_ids"]
        first = pair.type_ids.index(1)
        assert pair.ids[first:-1] == whole[:room]


@pytest.mark.parametrize("max_length", [512, 96, 64])
def test_long_query_keeps_its_share(model: CrossEncoder, reference, max_length: int) -> None:
    passage = "Vitamin D and multiple sclerosis risk in a cohort of nurses. " * 40
    loaded = CrossEncoder.load(model.info.path, max_length=max_length)
    assert loaded.query_max_tokens == min(64, (max_length - 3) // 2)
    [pair] = loaded.encode_pairs([LONG_QUERY], [passage])
    assert pair.type_ids.count(0) == loaded.query_max_tokens + 2
    assert len(pair.ids) == max_length
    np.testing.assert_allclose(
        loaded.score([LONG_QUERY], [passage]),
        _torch_scores(reference, [LONG_QUERY], [passage], max_length),
        rtol=1e-4,
        atol=1e-4,
    )


@pytest.mark.parametrize(
    ("queries", "passages", "error", "match"),
    [
        (["q", ""], ["p", "p"], ValueError, "query 1 is empty"),
        (["q"], ["  "], ValueError, "passage 0 is empty"),
        (["q", 3], ["p", "p"], TypeError, "query 1 is int"),
        (["q"], [None], TypeError, "passage 0 is NoneType"),
        (["q", "q"], ["p"], ValueError, "2 queries and 1 passages"),
        (["q"], "p", ValueError, "1 queries and 1 passages|aligned"),
        (["q"], b"p", TypeError, "got bytes"),
    ],
)
def test_bad_input(model: CrossEncoder, queries, passages, error, match) -> None:
    if isinstance(passages, str):  # a str passage is a batch of one: accepted
        assert model.score(queries, passages).shape == (1,)
        return
    with pytest.raises(error, match=match):
        model.score(queries, passages)


def test_empty_batch(model: CrossEncoder) -> None:
    assert model.score([], []).shape == (0,)


@pytest.mark.parametrize("max_length", [0, 7, 513, 1.5, True])
def test_bad_max_length(cross_encoder_path: Path, max_length) -> None:
    with pytest.raises(ValueError, match="max_length must be an int from 8"):
        CrossEncoder.load(cross_encoder_path, max_length=max_length)


def test_properties_and_manifest(cross_encoder_path: Path, model: CrossEncoder) -> None:
    assert (model.name, model.variant, model.max_length) == ("minilm-ce", "fp32", 512)
    assert model.training == CROSS_ENCODER_TRAINING
    info = read_model(cross_encoder_path)
    assert (info.kind, info.dim, info.pooling, info.normalize) == ("cross-encoder", 1, "cls", False)
    assert info.manifest["num_labels"] == 1
    assert set(info.variants) == {"fp32", "int8"}
    assert len(info.manifest["source"]["weights_sha256"]["model.safetensors"]) == 64
    assert info.manifest["export"]["torch_max_logit_diff"] < 1e-3
    tokenizer = json.loads((cross_encoder_path / "tokenizer.json").read_text())
    assert tokenizer["padding"] is None  # the shipped file pads to a fixed 128
    assert tokenizer["truncation"]["max_length"] == 512
    assert tokenizer["truncation"]["strategy"] == "OnlySecond"


def test_model_hash(cross_encoder_path: Path, model: CrossEncoder) -> None:
    assert CrossEncoder.load(cross_encoder_path).model_hash == model.model_hash
    others = {
        CrossEncoder.load(cross_encoder_path, variant="int8").model_hash,
        CrossEncoder.load(cross_encoder_path, max_length=256).model_hash,
    }
    assert model.model_hash not in others and len(others) == 2


def test_load_by_name(cross_encoder_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("HYBRID_ENGINE_MODELS", str(cross_encoder_path.parent))
    monkeypatch.chdir(cross_encoder_path.parent.parent)
    assert CrossEncoder.load("minilm-ce").info.path == cross_encoder_path


def test_missing_model_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="hybrid-engine models prepare-reranker"):
        CrossEncoder.load(tmp_path / "absent")


def test_kinds_are_not_mixed(cross_encoder_path: Path, model_path: Path) -> None:
    with pytest.raises(IndexFormatError, match=r"holds a cross-encoder model.*CrossEncoder\.load"):
        Encoder.load(cross_encoder_path)
    with pytest.raises(IndexFormatError, match=r"holds a bi-encoder model.*Encoder\.load"):
        CrossEncoder.load(model_path)


@pytest.mark.parametrize("file", ["model.onnx", "tokenizer.json", "model_int8.onnx"])
def test_corrupt_model_folder(cross_encoder_path: Path, tmp_path: Path, file: str) -> None:
    copy = tmp_path / "model"
    shutil.copytree(cross_encoder_path, copy)
    data = bytearray((copy / file).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / file).write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="sha256"):
        CrossEncoder.load(copy)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda m: m.pop("num_labels"), "num_labels"),
        (lambda m: m.update(num_labels=2), "num_labels 2"),
        (lambda m: m.update(kind="poly-encoder"), "poly-encoder"),
        (lambda m: m.update(max_length="long"), "long"),
    ],
)
def test_corrupt_manifest(cross_encoder_path: Path, tmp_path: Path, edit, match) -> None:
    copy = tmp_path / "model"
    shutil.copytree(cross_encoder_path, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    edit(manifest)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(IndexFormatError, match=match):
        read_model(copy)


def test_runtime_needs_no_torch(cross_encoder_path: Path) -> None:
    script = f"""
import sys
from hybrid_engine.models.cross_encoder import CrossEncoder
scores = CrossEncoder.load({str(cross_encoder_path)!r}, variant="int8").score("q", ["a", "b"])
assert scores.shape == (2,)
heavy = ("torch", "transformers", "huggingface_hub", "optimum")
loaded = sorted(m for m in heavy if m in sys.modules)
assert not loaded, loaded
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
