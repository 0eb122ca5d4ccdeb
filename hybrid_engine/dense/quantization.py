"""Quantized codes of a dense index's vectors: what its graph walk scores, so that the float32
vectors are read only to rescore the best candidates (``VectorStore.search``).

Three kinds (``DenseIndex.build(quantization=...)``):

* ``None``: the walk scores the float32 vectors themselves (no codes; 4 bytes per dimension).
* ``"int8"``: scalar quantization per dimension (1 byte per dimension). Dimension ``i`` maps
  ``[low_i, low_i + 255 step_i]`` (the range of the vectors it was fitted on) to the codes
  ``-128..127``; a code is ``round((x_i - low_i) / step_i) - 128``, clipped. A query ``q``
  scores ``sum_i (q_i step_i) c_i``: the inner product with the dequantized vector up to a
  constant of the query, so the ranking is that of the dequantized vectors.
* ``"binary"``: one bit per dimension and a float32 per vector (RaBitQ's estimator, as
  Elasticsearch's BBQ). With ``m`` the mean of the fitted vectors, bit ``i`` of ``x`` is
  ``x_i > m_i``; with ``s`` the +-1 signs of those bits and ``o = x - m``, the estimate of
  ``<q, o>`` is ``f <q, s>`` with ``f = |o|^2 / sum_i |o_i|`` (exact when ``o`` is a
  multiple of ``s``), and ``<q, x>`` is that plus ``<q, m>``, a constant of the query. The query
  is quantized to 4 bits per dimension (``query_planes``), so ``<q, s>`` takes 4 popcounts per
  64 dimensions.

Codes only rank candidates: every returned score is the exact float32 one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

QUANTIZATIONS = ("int8", "binary")
"""The quantization kinds besides None (float32)."""
KIND_NUMBERS = {None: 0, "int8": 1, "binary": 2}
"""How the search kernel (``_link_kernels``) names each kind."""
QUERY_BITS = 4
"""Bits per dimension of a query scored against binary codes."""
_CHUNK = 65_536
"""Vectors coded at a time."""


@dataclass(frozen=True)
class Codes:
    """The codes of ``n`` vectors of one kind, and what maps vectors and queries to them.

    Attributes
    ----------
    kind : {None, "int8", "binary"}
    data : numpy.ndarray
        None: float32 ``(n, dim)``, the vectors. int8: int8 ``(n, dim)``. binary: uint64
        ``(n, ceil(dim / 64))``, bit ``i % 64`` of word ``i // 64`` for dimension ``i``.
    first, second : numpy.ndarray
        int8: ``low`` and ``step``, float32 ``(dim,)``. binary: the mean ``m``, float32
        ``(dim,)``, and the factors ``f``, float32 ``(n,)``. None: empty float32 arrays.
    """

    kind: str | None
    data: np.ndarray
    first: np.ndarray
    second: np.ndarray

    @property
    def number(self) -> int:
        """The kind as the search kernel names it."""
        return KIND_NUMBERS[self.kind]

    @classmethod
    def of_vectors(cls, vectors: np.ndarray) -> Codes:
        """The float32 vectors scored as they are (kind None)."""
        empty = np.empty(0, dtype=np.float32)
        return cls(None, vectors, empty, empty)

    @classmethod
    def fit(cls, kind: str | None, vectors: np.ndarray) -> Codes:
        """Codes of ``kind`` for ``vectors`` (float32, ``(n, dim)``, n >= 1), the mapping fitted
        on them."""
        if kind is None:
            return cls.of_vectors(vectors)
        if kind == "int8":
            low = vectors.min(axis=0)
            step = (vectors.max(axis=0) - low) / np.float32(255)
            # A constant dimension: any step codes it exactly (every value maps to -128).
            step = np.where(step > 0, step, np.float32(1)).astype(np.float32)
            return cls(kind, _int8_codes(vectors, low, step), low, step)
        mean = vectors.mean(axis=0, dtype=np.float64).astype(np.float32)
        bits, factors = _binary_codes(vectors, mean)
        return cls(kind, bits, mean, factors)

    def extended(self, vectors: np.ndarray, all_vectors: np.ndarray) -> Codes:
        """These codes and those of ``vectors`` appended, with the same mapping (values past
        an int8 range are clipped to it). ``all_vectors``: the float32 vectors of the result
        (kind None scores them)."""
        if self.kind is None:
            return Codes.of_vectors(all_vectors)
        if self.kind == "int8":
            more = _int8_codes(vectors, self.first, self.second)
            return Codes(self.kind, np.concatenate((self.data, more)), self.first, self.second)
        bits, factors = _binary_codes(vectors, self.first)
        return Codes(
            self.kind,
            np.concatenate((self.data, bits)),
            self.first,
            np.concatenate((self.second, factors)),
        )

    def query_floats(self, queries: np.ndarray) -> np.ndarray:
        """float32 ``(n_queries, dim)``: the queries as the kernel scores them against
        float32 vectors or int8 codes (scaled by ``step``); binary: the queries as given."""
        if self.kind == "int8":
            return np.ascontiguousarray(queries * self.second, dtype=np.float32)
        return queries

    def query_constants(self, queries: np.ndarray) -> np.ndarray:
        """float64 ``(n_queries,)``: what the walk's scores of the queries (``-distance``) lack
        of their approximate inner products with the vectors. Those constants differ between
        codes fitted apart (the segments of an engine), so scores compare across them only
        with these added. int8: ``x ~ low + step (c + 128)``, so ``<q, low + 128 step>``;
        binary: ``<q, m>``; None: 0."""
        if self.kind is None:
            return np.zeros(len(queries))
        return queries.astype(np.float64) @ self._query_offset

    @cached_property
    def _query_offset(self) -> np.ndarray:
        """float64 ``(dim,)``: the vector ``query_constants`` takes the queries' products
        with."""
        offset = self.first + np.float32(128) * self.second if self.kind == "int8" else self.first
        return offset.astype(np.float64)

    def query_planes(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The queries quantized for binary codes: uint64 bit planes ``(n_queries,
        QUERY_BITS, words)`` (plane ``j`` holds bit ``j`` of each dimension's 4-bit value
        ``u_i``, so ``q_i ~ low + width u_i``) and float32 ``(n_queries, 3)`` rows ``(low,
        width, sum_i (low + width u_i))``. Other kinds: empty arrays of those dtypes."""
        words = self.data.shape[1] if self.kind == "binary" else 0
        if self.kind != "binary":
            return (
                np.zeros((len(queries), QUERY_BITS, words), dtype=np.uint64),
                np.zeros((len(queries), 3), dtype=np.float32),
            )
        low = queries.min(axis=1)
        width = (queries.max(axis=1) - low) / np.float32((1 << QUERY_BITS) - 1)
        width = np.where(width > 0, width, np.float32(1)).astype(np.float32)
        levels = np.rint((queries - low[:, None]) / width[:, None]).astype(np.uint8)
        planes = np.stack(
            [_pack_bits((levels >> j) & 1 == 1, words) for j in range(QUERY_BITS)], axis=1
        )
        dim = queries.shape[1]
        sums = low * np.float32(dim) + width * levels.sum(axis=1, dtype=np.float32)
        return planes, np.stack((low, width, sums), axis=1).astype(np.float32)


def _int8_codes(vectors: np.ndarray, low: np.ndarray, step: np.ndarray) -> np.ndarray:
    """int8 ``(n, dim)``: ``round((x - low) / step) - 128``, clipped to ``-128..127`` (in
    chunks of ``_CHUNK`` rows: the float temporaries stay small whatever ``n``)."""
    codes = np.empty(vectors.shape, dtype=np.int8)
    for lo in range(0, len(vectors), _CHUNK):
        part = np.rint((vectors[lo : lo + _CHUNK] - low) / step) - 128
        codes[lo : lo + _CHUNK] = np.clip(part, -128, 127)
    return codes


def _binary_codes(vectors: np.ndarray, mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """uint64 bits ``x_i > m_i`` ``(n, words)`` and float32 factors ``|o|^2 / sum |o_i|``
    (0 for a vector equal to the mean), in chunks of ``_CHUNK`` rows."""
    words = -(-vectors.shape[1] // 64)
    bits = np.empty((len(vectors), words), dtype=np.uint64)
    factors = np.empty(len(vectors), dtype=np.float32)
    for lo in range(0, len(vectors), _CHUNK):
        centred = vectors[lo : lo + _CHUNK] - mean
        bits[lo : lo + _CHUNK] = _pack_bits(centred > 0, words)
        absolute = np.abs(centred).sum(axis=1, dtype=np.float64)
        squares = np.einsum("ij,ij->i", centred, centred, dtype=np.float64)
        factors[lo : lo + _CHUNK] = np.divide(
            squares, absolute, out=np.zeros_like(squares), where=absolute > 0
        )
    return bits, factors


def _pack_bits(flags: np.ndarray, words: int) -> np.ndarray:
    """uint64 ``(n, words)`` holding bool ``flags`` ``(n, dim)``, dimension ``i`` at bit
    ``i % 64`` of word ``i // 64`` (zeros past ``dim``)."""
    padded = np.zeros((len(flags), words * 64), dtype=bool)
    padded[:, : flags.shape[1]] = flags
    packed = np.packbits(padded, axis=1, bitorder="little")
    return np.ascontiguousarray(packed).view("<u8").astype(np.uint64)
