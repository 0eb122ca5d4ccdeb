"""The embedding cache reads each shard once, verifies it, and keeps within its size bound."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from dense_oracle import Sha256Encoder, sha256_vectors

from hybrid_engine.dense import embedding_cache
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.errors import IndexFormatError


def chunk(i: int, size: int = 20) -> list[str]:
    return [f"chunk {i} text {j}" for j in range(size)]


def shards(root: Path) -> list[Path]:
    return sorted(
        p for p in (root / Sha256Encoder.model_hash).iterdir() if not p.name.startswith(".")
    )


def disk_bytes(root: Path) -> int:
    return sum(
        f.stat().st_size for f in (root / Sha256Encoder.model_hash).rglob("*") if f.is_file()
    )


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The shard paths ``read_index_dir`` is called on, in order."""
    calls: list[Path] = []
    real = embedding_cache.read_index_dir

    def counting(path: Path, *args: Any, **kwargs: Any) -> Any:
        calls.append(Path(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(embedding_cache, "read_index_dir", counting)
    return calls


def test_chunked_encoding_reads_each_shard_at_most_once(tmp_path: Path, reads: list[Path]) -> None:
    cache, encoder = EmbeddingCache(tmp_path), Sha256Encoder()
    k = 12
    for i in range(k):
        np.testing.assert_array_equal(cache.encode(encoder, chunk(i)), sha256_vectors(chunk(i)))
    assert len(shards(tmp_path)) == k
    assert len(reads) <= k, f"{len(reads)} shard reads for {k} chunks"
    assert len(set(reads)) == len(reads), "a shard was read twice"


def test_a_new_instance_reads_each_shard_once(tmp_path: Path, reads: list[Path]) -> None:
    for i in range(4):
        EmbeddingCache(tmp_path).encode(Sha256Encoder(), chunk(i))
    reads.clear()
    cache, encoder = EmbeddingCache(tmp_path), Sha256Encoder()
    everything = [t for i in range(4) for t in chunk(i)]
    for _ in range(3):
        np.testing.assert_array_equal(cache.encode(encoder, everything), sha256_vectors(everything))
    assert encoder.encoded == []
    assert sorted(reads) == shards(tmp_path)


def test_shards_of_another_instance_are_picked_up(tmp_path: Path) -> None:
    first, second = EmbeddingCache(tmp_path), EmbeddingCache(tmp_path)
    a, b = Sha256Encoder(), Sha256Encoder()
    first.encode(a, ["x"])
    second.encode(b, ["y"])
    np.testing.assert_array_equal(first.encode(a, ["x", "y"]), sha256_vectors(["x", "y"]))
    assert a.encoded == ["x"]


def test_a_flipped_byte_of_the_same_size_is_reported(tmp_path: Path) -> None:
    EmbeddingCache(tmp_path).encode(Sha256Encoder(), ["a", "b"])
    (shard,) = shards(tmp_path)
    vectors = shard / "vectors.npy"
    data = bytearray(vectors.read_bytes())
    data[-1] ^= 0xFF
    vectors.write_bytes(bytes(data))
    with pytest.raises(IndexFormatError, match=r"corrupt.*delete") as info:
        EmbeddingCache(tmp_path).encode(Sha256Encoder(), ["a"])
    assert str(shard) in str(info.value)


def test_size_bound_holds_on_disk_and_evicts_the_oldest(tmp_path: Path) -> None:
    EmbeddingCache(tmp_path / "probe").encode(Sha256Encoder(), chunk(0))
    one_shard = sum(f.stat().st_size for f in (tmp_path / "probe").rglob("*") if f.is_file())
    root = tmp_path / "cache"
    cache, encoder = EmbeddingCache(root, max_bytes=int(3.5 * one_shard)), Sha256Encoder()
    for i in range(10):
        cache.encode(encoder, chunk(i))
        assert disk_bytes(root) <= 3.5 * one_shard
    assert len(shards(root)) == 3
    encoder.encoded.clear()
    recent = chunk(7) + chunk(8) + chunk(9)
    np.testing.assert_array_equal(cache.encode(encoder, recent), sha256_vectors(recent))
    assert encoder.encoded == []  # the newest shards are kept
    np.testing.assert_array_equal(cache.encode(encoder, chunk(0)), sha256_vectors(chunk(0)))
    assert encoder.encoded == chunk(0)  # evicted: encoded again, correctly
    assert disk_bytes(root) <= 3.5 * one_shard


def test_eviction_by_another_instance_is_noticed(tmp_path: Path) -> None:
    EmbeddingCache(tmp_path / "probe").encode(Sha256Encoder(), chunk(0))
    one_shard = sum(f.stat().st_size for f in (tmp_path / "probe").rglob("*") if f.is_file())
    root = tmp_path / "cache"
    first = EmbeddingCache(root, max_bytes=int(1.5 * one_shard))
    second = EmbeddingCache(root, max_bytes=int(1.5 * one_shard))
    a, b = Sha256Encoder(), Sha256Encoder()
    first.encode(a, chunk(0))
    second.encode(b, chunk(1))  # evicts chunk 0's shard
    np.testing.assert_array_equal(first.encode(a, chunk(0)), sha256_vectors(chunk(0)))
    assert a.encoded == chunk(0) * 2


def test_a_shard_larger_than_the_bound_is_not_written(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path, max_bytes=100)
    np.testing.assert_array_equal(cache.encode(Sha256Encoder(), chunk(0)), sha256_vectors(chunk(0)))
    assert disk_bytes(tmp_path) == 0


class BadEncoder(Sha256Encoder):
    def __init__(self, dtype: type, dim: int) -> None:
        super().__init__()
        self.dtype, self.out_dim = dtype, dim

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 64, show_progress: bool = False
    ) -> np.ndarray:
        return np.zeros((len(texts), self.out_dim), self.dtype)


@pytest.mark.parametrize(
    ("dtype", "dim", "error"), [(np.float64, 8, TypeError), (np.float32, 4, ValueError)]
)
def test_bad_encoder_output_is_refused_and_not_cached(
    tmp_path: Path, dtype: type, dim: int, error: type[Exception]
) -> None:
    with pytest.raises(error, match=r"encoder\.encode returned"):
        EmbeddingCache(tmp_path).encode(BadEncoder(dtype, dim), ["a"])
    assert not (tmp_path / Sha256Encoder.model_hash).exists()
    np.testing.assert_array_equal(
        EmbeddingCache(tmp_path).encode(Sha256Encoder(), ["a"]), sha256_vectors(["a"])
    )


def test_default_bound_is_two_gib() -> None:
    from hybrid_engine.dense.embedding_cache import DEFAULT_MAX_BYTES

    assert DEFAULT_MAX_BYTES == 2 * 2**30


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_bad_bound_is_refused(tmp_path: Path, bad: object) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        EmbeddingCache(tmp_path, max_bytes=bad)  # type: ignore[arg-type]
