"""Growing a ``DenseIndex``: documents or vectors appended at the next positions, the graph
built when the index crosses ``exact_threshold``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from hybrid_engine.checks import check_int, check_threads
from hybrid_engine.corpus import DocIds, Document
from hybrid_engine.dense import vectors as _vectors
from hybrid_engine.dense.attributes import DenseAttributes
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.dense.encoding import encode_corpus


class DenseGrowth(DenseAttributes):
    """The methods of ``DenseIndex`` that add to it."""

    def add(
        self,
        documents: Iterable[Document] | np.ndarray,
        *,
        ids: Sequence[str] | None = None,
        batch_size: int = 64,
        num_threads: int | None = None,
        show_progress: bool = False,
        embedding_cache: EmbeddingCache | None = None,
    ) -> None:
        """Append documents (texts, encoded with the index's encoder) or vectors.

        New documents take the next positions. Crossing ``exact_threshold`` builds the graph.
        All or nothing: on an error nothing is added.

        Parameters
        ----------
        documents : iterable of str or dict, or numpy.ndarray
            Documents as in ``build``, or (a ``numpy.ndarray``) vectors of shape ``(dim,)`` or
            ``(n, dim)``.
        ids : sequence of str, optional
            With vectors only: their ids, required when the index has ids, refused when its
            ids are positions. Documents carry theirs in ``"_id"`` under the same rule.
        batch_size, num_threads, show_progress, embedding_cache
            As in ``build``.

        Raises
        ------
        ValueError, TypeError
            As in ``build`` and ``from_vectors``; also: texts without an encoder, vectors of
            another dimension, ids that repeat an indexed id or break the index's id mode.

        Notes
        -----
        Not thread-safe. With ids, checking uniqueness reads all indexed ids: add in batches.
        """
        threads = check_threads(num_threads)
        if isinstance(documents, np.ndarray):
            matrix = _vectors.prepare(documents, "vectors", self.metric, self.dim)
            new_ids = _vectors.added_ids(ids, len(matrix), self._doc_ids.explicit)
        else:
            if ids is not None:
                raise ValueError("ids= goes with vectors; documents carry their ids in '_id'")
            encoder = self._require_encoder("add texts")
            batch_size = check_int("batch_size", batch_size, 1)
            buffer, new_ids = encode_corpus(
                encoder,
                documents,
                self.dim,
                batch_size,
                self.metric,
                show_progress,
                embedding_cache,
            )
            matrix = buffer[: len(new_ids)]
        self._append(matrix, self._doc_ids.append(new_ids), threads)

    def _append(self, matrix: np.ndarray, doc_ids: DocIds, num_threads: int) -> None:
        """Add prepared rows whose ids are already in ``doc_ids`` (all or nothing)."""
        self._store.append(matrix, num_threads)
        self._doc_ids = doc_ids
