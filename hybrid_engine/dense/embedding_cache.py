"""A disk cache of text embeddings, keyed by the model's hash and each text's hash.

Layout: ``<root>/<model hash>/<shard>/`` where each shard is an index directory
(``storage.write_index_dir``) of two arrays, ``keys`` (uint8, ``(n, 16)``: BLAKE2b-128 of each
text's UTF-8) and ``vectors`` (float32, ``(n, dim)``). Encoding a corpus looks every text up,
encodes only the missing ones and appends them as a new shard, so an unchanged corpus is
never encoded twice and a grown one only for its new texts. Shard names start with the time
they were written (nanoseconds, zero-padded), so they sort oldest first: the oldest go first
when a model's shards outgrow ``EmbeddingCache.max_bytes``.

Writes and evictions use hidden entries of the model folder (a write's slot, an evicted
shard renamed before its removal); what a killed process left of them is removed the next
time an instance opens the model's shards.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hybrid_engine.errors import IndexFormatError
from hybrid_engine.protocols import TextEncoder
from hybrid_engine.storage import (
    read_index_dir,
    remove_unused_slots,
    user_cache_dir,
    write_index_dir,
)

FORMAT = "hybrid_engine.embeddings"
FORMAT_VERSION = 1
CACHE_ENV = "HYBRID_ENGINE_CACHE"
"""Environment variable naming the embedding cache folder."""
DEFAULT_MAX_BYTES = 2 * 2**30
"""Default bound on the disk space of one model's shards: 2 GiB, about 1.3 million
384-dimensional embeddings."""
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


_Stamp = tuple[tuple[str, int, int], ...]
"""(name, size, modification time in ns) of each file of a shard, by name."""


def _stamp(path: Path) -> _Stamp | None:
    """The stamp of shard directory ``path``, None when it is gone."""
    try:
        entries = list(os.scandir(path))
    except (FileNotFoundError, NotADirectoryError):
        return None
    stats = [(e.name, e.stat()) for e in entries if e.is_file()]
    return tuple(sorted((name, st.st_size, st.st_mtime_ns) for name, st in stats))


@dataclass(frozen=True)
class _Shard:
    """One shard directory, its arrays (memory-mapped) and its files' stamp when read."""

    path: Path
    keys: np.ndarray
    vectors: np.ndarray
    stamp: _Stamp

    @property
    def n_bytes(self) -> int:
        """Disk bytes of the shard's files."""
        return sum(size for _, size, _ in self.stamp)


@dataclass
class _ModelShards:
    """The shards of one model loaded so far, by directory name, and where each key is."""

    shards: dict[str, _Shard] = field(default_factory=dict)
    lookup: dict[bytes, tuple[str, int]] = field(default_factory=dict)

    def add(self, shard: _Shard) -> None:
        """Take ``shard``'s keys into the lookup (over those of shards added before)."""
        self.shards[shard.path.name] = shard
        for row, key in enumerate(shard.keys):
            self.lookup[key.tobytes()] = (shard.path.name, row)

    def forget(self, name: str) -> None:
        """Drop shard ``name`` and the keys that point into it."""
        shard = self.shards.pop(name)
        for key in shard.keys:
            if self.lookup.get(key.tobytes(), ("",))[0] == name:
                del self.lookup[key.tobytes()]

    def total_bytes(self) -> int:
        """Disk bytes of the shards loaded."""
        return sum(shard.n_bytes for shard in self.shards.values())


def _shard_names(folder: Path) -> set[str]:
    """The shard directories in ``folder``: every directory but hidden ones (temporary writes
    and evictions under way)."""
    if not folder.is_dir():
        return set()
    return {e.name for e in os.scandir(folder) if e.is_dir() and not e.name.startswith(".")}


def _read_shard(path: Path, dim: int, *, verify: bool) -> _Shard | None:
    """The shard at ``path``, checked to hold embeddings of ``dim``; None when it vanished
    meanwhile (evicted by another process)."""
    stamp = _stamp(path)  # before reading: a change while reading shows at the next refresh
    if stamp is None:
        return None
    try:
        _, arrays = read_index_dir(path, FORMAT, FORMAT_VERSION, mmap=True, verify=verify)
    except IndexFormatError as exc:
        if not path.exists():
            return None
        raise IndexFormatError(
            f"{exc}. This is an embedding cache shard, not an index: delete {path} (its texts "
            "are encoded again when next asked for)"
        ) from None
    keys, vectors = arrays.get("keys"), arrays.get("vectors")
    if (
        keys is None
        or vectors is None
        or keys.dtype != np.uint8
        or keys.shape[1:] != (_KEY_BYTES,)
        or vectors.dtype != np.float32
        or vectors.shape != (len(keys), dim)
    ):
        raise IndexFormatError(f"{path} is not an embedding shard of dimension {dim}; delete it")
    return _Shard(path, keys, vectors, stamp)


def _remove_leftovers(folder: Path) -> None:
    """Remove what killed processes left in a model folder: evicted shards not yet removed,
    and the slots of writes that no process holds."""
    if not folder.is_dir():
        return
    for entry in os.scandir(folder):
        if entry.name.startswith(".") and ".evicted-" in entry.name:
            shutil.rmtree(entry.path, ignore_errors=True)
    remove_unused_slots(folder)


def _delete_shard(path: Path) -> None:
    """Remove a shard directory: renamed hidden first, so no reader sees it half deleted."""
    hidden = path.with_name(f".{path.name}.evicted-{uuid.uuid4().hex[:8]}")
    try:
        os.replace(path, hidden)
    except FileNotFoundError:
        return  # another process evicted it first
    shutil.rmtree(hidden, ignore_errors=True)


def _warn(message: str) -> None:
    """A cache write that failed, reported without failing the encoding it serves."""
    warnings.warn(
        f"{message}: free disk space, or set ${CACHE_ENV} to another folder",
        RuntimeWarning,
        stacklevel=4,
    )


def _check_encoded(vectors: object, n: int, dim: int) -> None:
    """Raise unless ``vectors`` is what an encoder must return for ``n`` texts."""
    if not isinstance(vectors, np.ndarray) or vectors.dtype != np.float32:
        got = (
            f"dtype {vectors.dtype}" if isinstance(vectors, np.ndarray) else type(vectors).__name__
        )
        raise TypeError(
            f"encoder.encode returned {got}; an encoder must return a float32 numpy array of "
            "shape (len(texts), dim)"
        )
    if vectors.shape != (n, dim):
        raise ValueError(
            f"encoder.encode returned shape {vectors.shape} for {n} texts; expected ({n}, {dim}): "
            "check the encoder's dim"
        )


class EmbeddingCache:
    """Embeddings of texts already encoded, per model, on disk.

    Parameters
    ----------
    root : path-like, optional
        Cache folder; ``default_cache_dir()`` when None.
    max_bytes : int
        Bound on the disk space (file sizes) of each model's shards, ``DEFAULT_MAX_BYTES``
        (2 GiB) by default. After a new shard is written, the model's oldest shards are
        deleted until the rest fit; their texts are encoded again when next asked for. A new
        shard that alone would not fit is not written (its vectors are still returned).

    Notes
    -----
    Shards are written atomically, so concurrent writers never corrupt the cache (at worst
    both encode the same texts, and their in-flight shards may exceed ``max_bytes`` until the
    next write). Each shard is read once per instance: the first ``encode`` of a model loads
    its shards, verifying their sha256, and later calls load only shards that appeared since
    (written by other instances or processes) and forget those deleted. A shard that fails its
    checks is reported, not used. An instance is not safe to use from several threads at once.
    """

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(
                f"max_bytes must be an int >= 0 (bytes of disk per model), got {max_bytes!r}"
            )
        self._root = Path(root) if root is not None else default_cache_dir()
        self._max_bytes = max_bytes
        self._models: dict[tuple[str, int], _ModelShards] = {}

    @property
    def root(self) -> Path:
        """The cache folder."""
        return self._root

    @property
    def max_bytes(self) -> int:
        """Bound on the disk space of each model's shards."""
        return self._max_bytes

    def _refreshed(self, model_hash: str, dim: int) -> _ModelShards:
        """The shards of ``model_hash``, after dropping those gone from disk or changed since
        they were read and loading those new (or changed) on disk."""
        folder = self._root / model_hash
        if (model_hash, dim) not in self._models:
            _remove_leftovers(folder)
        model = self._models.setdefault((model_hash, dim), _ModelShards())
        on_disk = _shard_names(folder)
        for name, shard in list(model.shards.items()):
            if name not in on_disk or _stamp(shard.path) != shard.stamp:
                model.forget(name)
        for name in sorted(on_disk - set(model.shards)):
            loaded = _read_shard(folder / name, dim, verify=True)
            if loaded is not None:
                model.add(loaded)
        return model

    def _store(
        self, model: _ModelShards, model_hash: str, keys: np.ndarray, vectors: np.ndarray
    ) -> None:
        """Write a shard of ``keys`` and ``vectors`` if it fits ``max_bytes``, then evict the
        oldest shards until the model's shards fit."""
        if keys.nbytes + vectors.nbytes > self._max_bytes:
            return
        folder = self._root / model_hash
        path = folder / f"{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        try:
            write_index_dir(
                path,
                FORMAT,
                FORMAT_VERSION,
                {"model_hash": model_hash},
                {"keys": keys, "vectors": vectors},
            )
        except OSError as exc:
            _warn(
                f"the embeddings of {len(keys)} new texts were not cached in {folder} ({exc}); "
                "they are returned, and encoded again when next asked for"
            )
            return
        shard = _read_shard(path, vectors.shape[1], verify=False)  # just written: trusted
        if shard is not None:
            model.add(shard)
        total = model.total_bytes()
        for name in sorted(model.shards):  # oldest first
            if total <= self._max_bytes:
                break
            try:
                _delete_shard(model.shards[name].path)
            except OSError as exc:
                _warn(
                    f"an old shard could not be evicted from {folder} ({exc}), so the cache "
                    "may exceed max_bytes until the next write"
                )
                return
            total -= model.shards[name].n_bytes
            model.forget(name)

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
        TypeError, ValueError
            ``encoder.encode`` returned something other than a float32 array (TypeError) of
            shape ``(n, encoder.dim)`` (ValueError); nothing is cached then.

        Warns
        -----
        RuntimeWarning
            The new rows could not be written, or old shards evicted (a full disk, a
            read-only folder: the message names the folder and the error); the vectors are
            returned all the same.
        """
        texts = list(texts)
        keys = text_keys(texts)
        model = self._refreshed(encoder.model_hash, encoder.dim)
        out = np.empty((len(texts), encoder.dim), np.float32)
        missing: list[int] = []
        for position, key in enumerate(keys):
            hit = model.lookup.get(key.tobytes())
            if hit is None:
                missing.append(position)
            else:
                out[position] = model.shards[hit[0]].vectors[hit[1]]
        if missing:
            # One encoding per distinct new text.
            first: dict[bytes, int] = {}
            for position in missing:
                first.setdefault(keys[position].tobytes(), position)
            new = list(first.values())
            vectors = encoder.encode(
                [texts[p] for p in new], batch_size=batch_size, show_progress=show_progress
            )
            _check_encoded(vectors, len(new), encoder.dim)
            by_key = {keys[p].tobytes(): row for row, p in enumerate(new)}
            for position in missing:
                out[position] = vectors[by_key[keys[position].tobytes()]]
            self._store(model, encoder.model_hash, keys[new], vectors)
        return out
