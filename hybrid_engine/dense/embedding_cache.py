"""A disk cache of text embeddings, keyed by the model's hash and each text's hash.

Layout: ``<root>/<model hash>/<shard>/`` where each shard is an index directory
(``storage.write_index_dir``) of two arrays, ``keys`` (uint8, ``(n, 16)``: BLAKE2b-128 of each
text's UTF-8) and ``vectors`` (float32, ``(n, dim)``). Encoding a corpus looks every text up,
encodes only the missing ones and appends them as a new shard, so an unchanged corpus is
never encoded twice and a grown one only for its new texts.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hybrid_engine.errors import IndexFormatError
from hybrid_engine.protocols import TextEncoder
from hybrid_engine.storage import read_index_dir, user_cache_dir, write_index_dir

FORMAT = "hybrid_engine.embeddings"
FORMAT_VERSION = 1
CACHE_ENV = "HYBRID_ENGINE_CACHE"
"""Environment variable naming the embedding cache folder."""
_KEY_BYTES = 16


def default_cache_dir() -> Path:
    """``$HYBRID_ENGINE_CACHE``, else ``~/.cache/hybrid_engine/embeddings`` (``$XDG_CACHE_HOME``
    honoured)."""
    return user_cache_dir(CACHE_ENV, "embeddings")


def text_keys(texts: Sequence[str]) -> np.ndarray:
    """BLAKE2b-128 of each text's UTF-8 bytes, as a uint8 array of shape ``(n, 16)``."""
    digests = b"".join(
        hashlib.blake2b(t.encode("utf-8", "surrogatepass"), digest_size=_KEY_BYTES).digest()
        for t in texts
    )
    return np.frombuffer(digests, np.uint8).reshape(len(texts), _KEY_BYTES)


class EmbeddingCache:
    """Embeddings of texts already encoded, per model, on disk.

    Parameters
    ----------
    root : path-like, optional
        Cache folder; ``default_cache_dir()`` when None.

    Notes
    -----
    Shards are written atomically, so concurrent writers never corrupt the cache (at worst
    both encode the same texts). A shard that fails its checks is reported, not used.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self._root = Path(root) if root is not None else default_cache_dir()

    @property
    def root(self) -> Path:
        """The cache folder."""
        return self._root

    def _load(
        self, model_hash: str, dim: int
    ) -> tuple[dict[bytes, tuple[int, int]], list[np.ndarray]]:
        folder = self._root / model_hash
        lookup: dict[bytes, tuple[int, int]] = {}
        shards: list[np.ndarray] = []
        if not folder.is_dir():
            return lookup, shards
        for shard in sorted(p for p in folder.iterdir() if not p.name.startswith(".")):
            _, arrays = read_index_dir(shard, FORMAT, FORMAT_VERSION, mmap=True, verify=False)
            keys, vectors = arrays.get("keys"), arrays.get("vectors")
            if (
                keys is None
                or vectors is None
                or keys.dtype != np.uint8
                or keys.shape[1:] != (_KEY_BYTES,)
                or vectors.dtype != np.float32
                or vectors.shape != (len(keys), dim)
            ):
                raise IndexFormatError(
                    f"{shard} is not an embedding shard of dimension {dim}; delete it"
                )
            index = len(shards)
            shards.append(vectors)
            for row, key in enumerate(keys):
                lookup[key.tobytes()] = (index, row)
        return lookup, shards

    def encode(
        self,
        encoder: TextEncoder,
        texts: Sequence[str],
        *,
        batch_size: int = 64,
        show_progress: bool = False,
    ) -> np.ndarray:
        """``encoder.encode(texts)``, reusing cached rows and caching the new ones.

        Returns
        -------
        numpy.ndarray
            float32, shape ``(len(texts), encoder.dim)``, equal to what ``encoder.encode``
            returns for the same texts.

        Raises
        ------
        IndexFormatError
            A cache shard of this model is corrupt (the message names it: delete it).
        """
        texts = list(texts)
        keys = text_keys(texts)
        lookup, shards = self._load(encoder.model_hash, encoder.dim)
        out = np.empty((len(texts), encoder.dim), np.float32)
        missing: list[int] = []
        for position, key in enumerate(keys):
            hit = lookup.get(key.tobytes())
            if hit is None:
                missing.append(position)
            else:
                out[position] = shards[hit[0]][hit[1]]
        if missing:
            # One encoding per distinct new text.
            first: dict[bytes, int] = {}
            for position in missing:
                first.setdefault(keys[position].tobytes(), position)
            new = list(first.values())
            vectors = encoder.encode(
                [texts[p] for p in new], batch_size=batch_size, show_progress=show_progress
            )
            by_key = {keys[p].tobytes(): row for row, p in enumerate(new)}
            for position in missing:
                out[position] = vectors[by_key[keys[position].tobytes()]]
            shard = self._root / encoder.model_hash / f"{len(shards):06d}-{uuid.uuid4().hex[:8]}"
            write_index_dir(
                shard,
                FORMAT,
                FORMAT_VERSION,
                {"model_hash": encoder.model_hash},
                {"keys": keys[new], "vectors": vectors},
            )
        return out
