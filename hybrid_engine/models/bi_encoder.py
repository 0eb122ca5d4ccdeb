"""The bi-encoder: texts to L2-normalised embeddings with an ONNX model, no PyTorch."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from tokenizers import Encoding

from hybrid_engine.checks import check_texts
from hybrid_engine.errors import RefusedModelWarning
from hybrid_engine.models._batching import pad_encodings
from hybrid_engine.models.session import TextModel
from hybrid_engine.models.store import BI_ENCODER, ModelInfo

TOKENS_PER_RUN = 2048
"""Most tokens (texts x padded length) in one ONNX Runtime call: small runs keep the
activations in cache, which is faster than one large batch on a CPU."""


def refusal(info: ModelInfo) -> str | None:
    """Why a prepared bi-encoder's training record refuses it, or None (accepted, or no
    record: a model the engine did not train)."""
    training = info.manifest.get("training")
    validation = training.get("validation") if isinstance(training, dict) else None
    if not isinstance(validation, dict) or validation.get("accepted") is not False:
        return None
    return (
        f"{info.path} holds the fine-tuned bi-encoder {info.name!r} that its validation gate "
        f"REFUSED (dense nDCG@10 {validation.get('tuned')} against the base model's "
        f"{validation.get('base')}, p={validation.get('p_value')}): it was prepared only "
        "because train-encoder was given --force, and may make results worse; use the default "
        "model or a model the gate accepted"
    )


class Encoder(TextModel):
    """A sentence-transformers style bi-encoder on ONNX Runtime: token states pooled (mean,
    first token or last token, as the model was trained), optionally L2-normalised, with the
    model's query and document prefixes.

    Load one with ``Encoder.load``. The default model is all-MiniLM-L6-v2 as prepared by
    ``hybrid-engine models prepare``, in its int8 variant when prepared (no significant loss of
    nDCG@10 against fp32 on the five shared collections, 2.2x the encoding speed:
    docs/quantization.md); ``hybrid-engine models prepare-encoder`` prepares any other local
    one (docs/models.md).

    Notes
    -----
    Thread-safe: ``encode`` may be called from several threads; the session releases the GIL.
    Texts longer than ``max_length`` tokens are truncated, as sentence-transformers does.
    The engine embeds queries with ``encode_query`` and documents with ``encode_document``;
    ``encode`` adds no prefix.
    """

    kind = BI_ENCODER
    preferred_variant = (
        "int8"  # never significantly worse on five collections: docs/quantization.md
    )

    def __init__(self, info: ModelInfo, variant: str, num_threads: int | None) -> None:
        """Private: use ``load`` (which warns with ``RefusedModelWarning`` when the folder
        holds a model its training gate refused)."""
        super().__init__(info, variant, num_threads)
        reason = refusal(info)
        if reason is not None:
            warnings.warn(reason, RefusedModelWarning, stacklevel=3)

    @property
    def dim(self) -> int:
        """Embedding dimension."""
        return self._info.dim

    @property
    def query_prefix(self) -> str:
        """What ``encode_query`` prepends to each text ("" for none)."""
        return self._info.query_prefix

    @property
    def document_prefix(self) -> str:
        """What ``encode_document`` prepends to each text ("" for none)."""
        return self._info.document_prefix

    def __repr__(self) -> str:
        return (
            f"Encoder({self.name!r}, variant={self.variant!r}, dim={self.dim}, "
            f"max_length={self.max_length}, pooling={self._info.pooling!r})"
        )

    def _embed(self, encodings: Sequence[Encoding]) -> np.ndarray:
        feed = pad_encodings(encodings, self._inputs)
        states = self._session.run(None, feed)[0]
        mask = feed["attention_mask"]
        if self._info.pooling == "cls":
            pooled = states[:, 0]
        elif self._info.pooling == "lasttoken":  # padding is on the right
            pooled = states[np.arange(len(states)), mask.sum(axis=1) - 1]
        else:
            weights = mask.astype(np.float32)[:, :, None]
            pooled = (states * weights).sum(axis=1) / weights.sum(axis=1)
        if self._info.normalize:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled.astype(np.float32, copy=False)

    def encode(
        self,
        texts: str | Sequence[str] | np.ndarray,
        *,
        batch_size: int = 64,
        show_progress: bool = False,
    ) -> np.ndarray:
        """Embed texts.

        Parameters
        ----------
        texts : str, sequence of str or 1-d numpy array of str
            One text or a batch; each non-blank. Tokens past ``max_length`` are dropped.
        batch_size : int
            Most texts per ONNX Runtime call. Texts are sorted by token count so each call
            pads little, and long texts go in smaller calls (at most ``TOKENS_PER_RUN``
            tokens each); the order of the output is the order of ``texts``.
        show_progress : bool
            Show a progress bar (tqdm) on stderr.

        Returns
        -------
        numpy.ndarray
            float32, shape ``(len(texts), dim)``, rows L2-normalised when the model
            normalises (every model the engine ships does).

        Raises
        ------
        TypeError
            ``texts`` is not a str or a batch of str (``checks.check_queries``).
        ValueError
            A blank text, or ``batch_size < 1``.
        """
        return self._encode(check_texts(texts), "", batch_size, show_progress)

    def encode_query(
        self,
        texts: str | Sequence[str] | np.ndarray,
        *,
        batch_size: int = 64,
        show_progress: bool = False,
    ) -> np.ndarray:
        """``encode`` of each text after the model's ``query_prefix`` (e5's ``"query: "``,
        bge's retrieval instruction...): how the engine embeds queries. Same parameters,
        returns and raises as ``encode``."""
        return self._encode(check_texts(texts), self.query_prefix, batch_size, show_progress)

    def encode_document(
        self,
        texts: str | Sequence[str] | np.ndarray,
        *,
        batch_size: int = 64,
        show_progress: bool = False,
    ) -> np.ndarray:
        """``encode`` of each text after the model's ``document_prefix``: how the engine
        embeds documents. Same parameters, returns and raises as ``encode``."""
        return self._encode(check_texts(texts), self.document_prefix, batch_size, show_progress)

    def _encode(
        self, texts: list[str], prefix: str, batch_size: int, show_progress: bool
    ) -> np.ndarray:
        if prefix:
            texts = [prefix + text for text in texts]
        runs = self._runs(texts, batch_size, TOKENS_PER_RUN, show_progress, "encoding")
        out = np.empty((len(texts), self.dim), np.float32)
        for positions, encodings in runs:
            out[positions] = self._embed(encodings)
        return out
