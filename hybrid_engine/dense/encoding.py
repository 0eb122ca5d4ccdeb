"""Texts to index vectors: the encoder checked, its output checked and prepared like given
vectors, a corpus encoded in chunks (through the embedding cache when given), queries and
documents each by their side of the encoder (``sided``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import numpy as np

from hybrid_engine.checks import check_int, check_queries, nonblank_rows
from hybrid_engine.corpus import ENCODE_CHUNK, Document, iter_batches
from hybrid_engine.dense import vectors as _vectors
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.protocols import TextEncoder

QUERY_BATCH = 32
"""The encoder's batch size for query texts (the ``TextEncoder`` default)."""
QUERY = "query"
DOCUMENT = "document"


class _Side:
    """An encoder as one side sees it: ``encode`` is its ``encode_query`` or
    ``encode_document``; ``dim`` and ``model_hash`` are its own."""

    def __init__(self, encoder: TextEncoder, encode: Any) -> None:
        self._encoder = encoder
        self.encode = encode

    @property
    def dim(self) -> int:
        return self._encoder.dim

    @property
    def model_hash(self) -> str:
        return self._encoder.model_hash


def sided(encoder: TextEncoder, side: str) -> TextEncoder:
    """``encoder`` as it embeds ``side`` texts (``QUERY`` or ``DOCUMENT``): through its
    ``encode_query`` or ``encode_document`` where it has one (an ``Encoder`` with prefixes,
    a wrapper of sentence-transformers 5), else ``encoder`` itself."""
    method = getattr(encoder, f"encode_{side}", None)
    return encoder if method is None else _Side(encoder, method)


def check_encoder(encoder: Any) -> int:
    """The encoder's ``dim``; TypeError or ValueError unless it looks like a ``TextEncoder``."""
    missing = [name for name in ("dim", "model_hash", "encode") if not hasattr(encoder, name)]
    if missing or not callable(encoder.encode):
        raise TypeError(
            f"encoder {type(encoder).__name__} lacks {missing or ['a callable encode']}; it must "
            "provide dim, model_hash and encode(texts) (see hybrid_engine.protocols.TextEncoder)"
        )
    if not isinstance(encoder.model_hash, str):
        raise TypeError(
            f"encoder.model_hash must be a str, got {type(encoder.model_hash).__name__}"
        )
    return check_int("encoder.dim", encoder.dim, 1)


def encode_texts(
    encoder: TextEncoder,
    texts: list[str],
    dim: int,
    batch_size: int,
    metric: str,
    side: str,
    cache: EmbeddingCache | None = None,
    show_progress: bool = False,
) -> np.ndarray:
    """The ``side`` (``QUERY`` or ``DOCUMENT``) encoding of ``texts`` (``sided``; through
    ``cache`` if given), checked and prepared like vectors given directly."""
    encoder = sided(encoder, side)
    if cache is not None:
        rows = cache.encode(encoder, texts, batch_size=batch_size, show_progress=show_progress)
    else:
        rows = encoder.encode(texts, batch_size=batch_size, show_progress=show_progress)
    if not isinstance(rows, np.ndarray) or rows.dtype != np.float32:
        got = f"dtype {rows.dtype}" if isinstance(rows, np.ndarray) else type(rows).__name__
        raise TypeError(
            f"encoder.encode returned {got}; a TextEncoder must return a float32 numpy array "
            f"of shape (len(texts), dim)"
        )
    if rows.shape != (len(texts), dim):
        raise ValueError(
            f"encoder.encode returned shape {rows.shape} for {len(texts)} texts; expected "
            f"({len(texts)}, {dim}): check the encoder's dim"
        )
    return _vectors.prepare(rows, "encoder output", metric)


def encode_corpus(
    encoder: TextEncoder,
    corpus: Iterable[Document],
    dim: int,
    batch_size: int,
    metric: str,
    show_progress: bool,
    cache: EmbeddingCache | None = None,
) -> tuple[np.ndarray, list[str | None]]:
    """The prepared vectors of a corpus, in the first rows of a buffer, and the ``_id``s.

    Documents go to the encoder ``ENCODE_CHUNK`` at a time, so it can sort many texts by
    length and pad little; ``batch_size`` is its batch size within a chunk.
    """
    buffer = np.empty((0, dim), dtype=np.float32)
    ids: list[str | None] = []
    for texts, batch_ids in iter_batches(corpus, ENCODE_CHUNK):
        rows = encode_texts(encoder, texts, dim, batch_size, metric, DOCUMENT, cache, show_progress)
        buffer = _vectors.grown(buffer, len(ids), len(rows))
        buffer[len(ids) : len(ids) + len(rows)] = rows
        ids.extend(batch_ids)
    return buffer, ids


def check_loaded_encoder(
    path: str | os.PathLike[str], encoder: TextEncoder, dim: int, model_hash: str | None
) -> None:
    if check_encoder(encoder) != dim:
        raise ValueError(
            f"the encoder makes {encoder.dim}-dimensional vectors, the index at {path} holds "
            f"{dim}-dimensional ones; load it with the encoder that built it"
        )
    if model_hash is not None and encoder.model_hash != model_hash:
        raise ValueError(
            f"the index at {path} was built by the model with hash {model_hash}, the encoder "
            f"has {encoder.model_hash}: its query vectors would not match (another model, "
            "variant, pooling or query/document prefix); load with the encoder that built the "
            "index, or rebuild the index with this one"
        )


def encode_queries(
    encoder: TextEncoder, queries: Any, dim: int, metric: str
) -> tuple[np.ndarray, np.ndarray, int]:
    """Text queries as prepared float32 rows of the non-blank ones, their positions in the
    batch, and the batch's size (blank queries are not encoded)."""
    try:
        texts = check_queries(queries)
    except TypeError as exc:
        raise TypeError(
            f"{exc}; queries are either all str (texts) or a numeric array (vectors)"
        ) from None
    rows = nonblank_rows(texts)
    if len(rows) == 0:
        return np.empty((0, dim), np.float32), rows, len(texts)
    asked = [texts[row] for row in rows]
    return encode_texts(encoder, asked, dim, QUERY_BATCH, metric, QUERY), rows, len(texts)
