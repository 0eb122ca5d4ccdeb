"""The corpus embedding cache: only new texts are encoded, outputs equal the encoder's."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from hybrid_engine.dense.embedding_cache import EmbeddingCache, text_keys
from hybrid_engine.errors import IndexFormatError


class CountingEncoder:
    """Deterministic fake: each text's vector comes from its sha256; counts encoded texts."""

    dim = 8

    def __init__(self, model_hash: str = "model-a") -> None:
        self.model_hash = model_hash
        self.encoded: list[str] = []

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        self.encoded.extend(texts)
        rows = [
            np.frombuffer(hashlib.sha256(t.encode()).digest()[:32], np.uint8)[: self.dim]
            for t in texts
        ]
        out = np.asarray(rows, np.float32).reshape(len(texts), self.dim) + 1
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_unchanged_corpus_is_not_encoded_twice(tmp_path: Path) -> None:
    texts = [f"document {i}" for i in range(50)]
    encoder = CountingEncoder()
    first = EmbeddingCache(tmp_path).encode(encoder, texts)
    np.testing.assert_array_equal(first, CountingEncoder().encode(texts))
    assert len(encoder.encoded) == 50
    again = EmbeddingCache(tmp_path).encode(encoder, texts)  # a new instance reads the disk
    np.testing.assert_array_equal(again, first)
    assert len(encoder.encoded) == 50


def test_only_new_texts_are_encoded(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    encoder = CountingEncoder()
    cache.encode(encoder, ["a", "b", "c"])
    grown = ["c", "new 1", "a", "new 2", "new 1", "b"]
    out = cache.encode(encoder, grown)
    assert encoder.encoded[3:] == ["new 1", "new 2"]  # each new text once
    np.testing.assert_array_equal(out, CountingEncoder().encode(grown))
    assert len(list((tmp_path / "model-a").iterdir())) == 2


def test_models_do_not_share_entries(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    a, b = CountingEncoder("model-a"), CountingEncoder("model-b")
    cache.encode(a, ["x", "y"])
    cache.encode(b, ["x", "y"])
    assert b.encoded == ["x", "y"]


def test_keys_are_content_hashes() -> None:
    keys = text_keys(["x", "y", "x", "ü"])
    assert keys.shape == (4, 16) and keys.dtype == np.uint8
    assert (keys[0] == keys[2]).all() and not (keys[0] == keys[1]).all()
    assert keys[3].tobytes() == hashlib.blake2b("ü".encode(), digest_size=16).digest()


def test_corrupt_shard_is_reported(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    cache.encode(CountingEncoder(), ["a", "b"])
    (shard,) = (tmp_path / "model-a").iterdir()
    vectors = shard / "vectors.npy"
    vectors.write_bytes(vectors.read_bytes()[:-4])
    with pytest.raises(IndexFormatError, match="truncated"):
        cache.encode(CountingEncoder(), ["a"])


def test_wrong_dimension_shard_is_reported(tmp_path: Path) -> None:
    EmbeddingCache(tmp_path).encode(CountingEncoder(), ["a"])
    other = CountingEncoder()
    other.dim = 4
    with pytest.raises(IndexFormatError, match="dimension 4"):
        EmbeddingCache(tmp_path).encode(other, ["a"])
