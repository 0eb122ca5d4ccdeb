"""What the indexes and stages need of the models: structural types (``typing.Protocol``), so
any object with these members serves, the ONNX models of ``hybrid_engine.models`` included."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from hybrid_engine.result import SparseVectors


class FieldReader(Protocol):
    """What the stages that read the fused candidates' metadata (``facets``, ``rescore``) need
    of a collection: a live snapshot, or the metadata a sharded search fetched of them."""

    def field_values(self, field: str, positions: np.ndarray) -> list[list[object]]:
        """The values of metadata ``field`` each document at ``positions`` (no padding)
        holds, in that order: a scalar as a list of one, a list as it is, none for a document
        without the field."""
        ...

    def doc_ids_at(self, positions: np.ndarray) -> list[str]:
        """The ids of the documents at ``positions`` (no padding), in that order."""
        ...


class TextEncoder(Protocol):
    """What ``DenseIndex`` and ``EmbeddingCache`` need from a text encoder (``Encoder`` is one).

    An encoder that embeds queries and documents differently (with prefixes or instructions)
    also has ``encode_query`` and ``encode_document`` of ``encode``'s signature, the names
    of sentence-transformers 5; the engine then embeds queries and documents with them
    (``dense.encoding.sided``), and ``model_hash`` must identify the prefixes too.
    """

    @property
    def dim(self) -> int:
        """Length of the vectors."""
        ...

    @property
    def model_hash(self) -> str:
        """sha256 hex digest identifying the model weights (recorded in saved indexes)."""
        ...

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 32, show_progress: bool = False
    ) -> np.ndarray:
        """float32 array of shape ``(len(texts), dim)``, rows L2-normalised."""
        ...


class SparseEncoder(Protocol):
    """What ``SpladeIndex`` needs from a sparse text encoder (``SpladeEncoder`` is one)."""

    @property
    def vocab_size(self) -> int:
        """Term ids are in ``[0, vocab_size)``."""
        ...

    @property
    def model_hash(self) -> str:
        """sha256 hex digest identifying the model (recorded in saved indexes)."""
        ...

    def encode(self, texts: Sequence[str], *, show_progress: bool = False) -> SparseVectors:
        """One CSR row of (term id, weight > 0) per text."""
        ...


class PairScorer(Protocol):
    """What ``rerank`` needs of a cross-encoder (``CrossEncoder`` is one)."""

    def score(self, queries: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        """float32 ``(n,)`` relevance of aligned (query, passage) pairs, higher is better."""
        ...
