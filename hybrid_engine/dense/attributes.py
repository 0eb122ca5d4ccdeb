"""What a ``DenseIndex`` holds: its vectors and graph (``store``), the documents' ids and the
text encoder, and the read-only properties over them."""

from __future__ import annotations

import numpy as np

from hybrid_engine.corpus import DocIds
from hybrid_engine.dense.store import VectorStore
from hybrid_engine.protocols import TextEncoder


class DenseAttributes:
    """The state of a ``DenseIndex`` and its properties."""

    def __init__(
        self,
        store: VectorStore,
        doc_ids: DocIds,
        encoder: TextEncoder | None,
        model_hash: str | None,
    ) -> None:
        """Private: use ``build``, ``from_vectors`` or ``load``. Everything is already checked;
        ``store`` holds one vector per id of ``doc_ids``."""
        self._store = store
        self._doc_ids = doc_ids
        self._encoder = encoder
        self._model_hash = model_hash

    # -- properties ---------------------------------------------------------------------------

    @property
    def dim(self) -> int:
        """Length of the vectors."""
        return int(self._store.vectors.shape[1])

    @property
    def metric(self) -> str:
        """``"cosine"`` or ``"ip"``."""
        return self._store.params.metric

    @property
    def num_documents(self) -> int:
        return len(self._doc_ids)

    def __len__(self) -> int:
        return self.num_documents

    @property
    def doc_ids(self) -> DocIds:
        """``doc_ids[position]``: the id of a result position."""
        return self._doc_ids

    @property
    def vectors(self) -> np.ndarray:
        """float32 ``(num_documents, dim)``, read-only: unit rows under cosine."""
        return self._store.vectors

    @property
    def m(self) -> int:
        """HNSW graph degree (hnswlib's ``M``)."""
        return self._store.params.m

    @property
    def ef_construction(self) -> int:
        return self._store.params.ef_construction

    @property
    def exact_threshold(self) -> int:
        """Up to this many vectors, no graph: every search is exact."""
        return self._store.params.exact_threshold

    @property
    def quantization(self) -> str | None:
        """What the graph walk scores: None (the float32 vectors), ``"int8"`` or ``"binary"``
        codes (``dense.quantization``)."""
        return self._store.params.quantization

    @property
    def oversample(self) -> float:
        """Graph candidates rescored with the float32 vectors per hit asked for (>= 1). Saved
        with the index; settable, not while another thread searches."""
        return self._store.oversample

    @oversample.setter
    def oversample(self, value: float) -> None:
        self._store.oversample = value

    @property
    def ef_search(self) -> int:
        """HNSW search-time candidate list size (at least ``k`` is used). Saved with the index.

        Setting it is not thread-safe: do not set it while another thread searches.
        """
        return self._store.ef_search

    @ef_search.setter
    def ef_search(self, value: int) -> None:
        self._store.ef_search = value

    @property
    def uses_graph(self) -> bool:
        """Whether searches go through the HNSW graph (False: always exact)."""
        return self._store.graph is not None

    @property
    def encoder(self) -> TextEncoder | None:
        """The text encoder, or None (then only vector queries and adds)."""
        return self._encoder

    @property
    def encoder_model_hash(self) -> str | None:
        """``model_hash`` of the encoder that produced the vectors, when known."""
        return self._model_hash

    def __repr__(self) -> str:
        search = (
            f"HNSW m={self.m} ef_construction={self.ef_construction} ef_search={self.ef_search}"
            if self.uses_graph
            else "exact"
        )
        return (
            f"DenseIndex({self.num_documents} documents, dim={self.dim}, "
            f"metric={self.metric!r}, {search})"
        )

    def _require_encoder(self, action: str) -> TextEncoder:
        if self._encoder is None:
            raise ValueError(
                f"cannot {action}: this index has no text encoder (it was built from vectors or "
                "loaded without one); pass encoder= to DenseIndex.load or from_vectors, or use "
                "vectors"
            )
        return self._encoder
