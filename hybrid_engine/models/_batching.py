"""Token batches for the ONNX models: length-sorted runs and padded input arrays."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence

import numpy as np
from tokenizers import Encoding


def length_runs(lengths: np.ndarray, max_items: int, max_tokens: int) -> Iterator[np.ndarray]:
    """Positions of each model call: longest inputs first, so each call pads little.

    Parameters
    ----------
    lengths : numpy.ndarray
        int64, shape ``(n,)``: tokens of each input.
    max_items : int
        Most inputs per call.
    max_tokens : int
        Most tokens per call (inputs x the longest one's length); an input longer than that
        goes alone.

    Yields
    ------
    numpy.ndarray
        int64 positions into ``lengths``; together they cover every position once.
    """
    order = np.argsort(-lengths, kind="stable")
    start = 0
    while start < len(order):
        longest = int(lengths[order[start]])
        size = min(max_items, max(1, max_tokens // longest))
        yield order[start : start + size]
        start += size


def pad_encodings(encodings: Sequence[Encoding], inputs: Collection[str]) -> dict[str, np.ndarray]:
    """The ONNX feed of ``encodings``, right-padded: ``input_ids``, ``attention_mask`` and
    ``token_type_ids``, each only when it is one of the graph's ``inputs``.

    Returns
    -------
    dict
        Each int64, shape ``(len(encodings), longest)``; padding is 0 in all three.
    """
    width = max(len(e.ids) for e in encodings)
    ids = np.zeros((len(encodings), width), np.int64)
    mask = np.zeros((len(encodings), width), np.int64)
    types = np.zeros((len(encodings), width), np.int64)
    for row, encoding in enumerate(encodings):
        n = len(encoding.ids)
        ids[row, :n] = encoding.ids
        mask[row, :n] = 1
        types[row, :n] = encoding.type_ids
    feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    return {name: array for name, array in feed.items() if name in inputs}
