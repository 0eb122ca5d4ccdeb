"""The SPLADE encoder: texts to learned-sparse term weights with an ONNX model, no PyTorch.

The prepared graph (``hybrid-engine models prepare``, model ``splade-tiny``) ends in SPLADE's
pooling, ``max over tokens of log1p(relu(logits)) * attention_mask``, so each text comes out
as one non-negative weight per vocabulary term, most of them zero.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hybrid_engine.checks import check_texts
from hybrid_engine.models._batching import pad_encodings
from hybrid_engine.models.session import TextModel
from hybrid_engine.models.store import SPLADE
from hybrid_engine.result import SparseVectors

TOKENS_PER_RUN = 1024
"""Most padded tokens in one ONNX Runtime call. The graph's vocabulary projection makes a
(tokens x 30,522) float32 tensor before pooling, 125 MB at 1,024 tokens; runs of 512, 1,024
and 2,048 tokens encoded SciFact passages equally fast here (23-24 docs/s fp32), so this bounds
memory at no cost."""


class SpladeEncoder(TextModel):
    """A SPLADE model (BERT masked-language model, max-pooled log-saturated logits) on ONNX
    Runtime.

    Load one with ``SpladeEncoder.load``.

    Notes
    -----
    Thread-safe: ``encode`` may be called from several threads; the session releases the GIL.
    Texts longer than ``max_length`` tokens are truncated.
    """

    kind = SPLADE

    @property
    def vocab_size(self) -> int:
        """Number of vocabulary terms: term ids are in ``[0, vocab_size)``."""
        return self._info.dim

    def __repr__(self) -> str:
        return (
            f"SpladeEncoder({self.name!r}, variant={self.variant!r}, "
            f"vocab_size={self.vocab_size}, max_length={self.max_length})"
        )

    def encode(
        self,
        texts: str | Sequence[str] | np.ndarray,
        *,
        batch_size: int = 64,
        show_progress: bool = False,
    ) -> SparseVectors:
        """Sparse term weights of texts.

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
        SparseVectors
            One row per text, in order: its terms of positive weight.

        Raises
        ------
        TypeError
            ``texts`` is not a str or a batch of str (``checks.check_queries``).
        ValueError
            A blank text, or ``batch_size < 1``.
        """
        checked = check_texts(texts)
        runs = self._runs(checked, batch_size, TOKENS_PER_RUN, show_progress, "encoding (SPLADE)")
        counts = np.zeros(len(checked), np.int64)
        rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for positions, encodings in runs:
            pooled = self._session.run(None, pad_encodings(encodings, self._inputs))[0]
            row, term = np.nonzero(pooled > 0)
            counts[positions] = np.bincount(row, minlength=len(positions))
            rows.append((positions[row], term.astype(np.int32), pooled[row, term]))
        return _gather(counts, rows)


def _gather(
    counts: np.ndarray, runs: list[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> SparseVectors:
    """CSR of the runs' (text position, term, weight) entries, texts in position order and
    terms ascending within a text (each run lists a text's terms ascending)."""
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    terms = np.empty(offsets[-1], np.int32)
    weights = np.empty(offsets[-1], np.float32)
    for positions, run_terms, run_weights in runs:
        if not len(positions):
            continue
        # Entries of one text are contiguous in a run; its k-th entry goes to offsets[p] + k.
        first = np.r_[0, np.flatnonzero(np.diff(positions)) + 1]
        rank = np.arange(len(positions)) - np.repeat(first, np.diff(np.r_[first, len(positions)]))
        slots = offsets[positions] + rank
        terms[slots] = run_terms
        weights[slots] = run_weights
    return SparseVectors(offsets, terms, weights.astype(np.float32, copy=False))
