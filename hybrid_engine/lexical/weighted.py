"""Weighted queries of analysed terms (``{term: weight}``) as the CSR the BM25 kernels read."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

_LOWEST = float(np.finfo(np.float32).tiny)
_HIGHEST = float(np.finfo(np.float32).max)
"""The weights a query may give: positive normal float32 numbers (the kernels' type)."""


def weighted_queries(
    queries: object, term_id: Callable[[str], int]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Check a batch of weighted queries and encode it as CSR over an index's term ids.

    Parameters
    ----------
    queries : sequence of mapping of str to float
        One ``{analysed term: weight}`` per query; every weight a positive, normal float32
        number. The terms are index terms (what ``Analyzer.analyze`` gives), not analysed
        again.
    term_id : callable
        An index's term id of an analysed term, -1 when absent (``BM25Index.term_id``).

    Returns
    -------
    tuple of numpy.ndarray
        ``(terms, weights, offsets)``: int32 term ids, ascending within a query, float32
        weights, int64 ``(n_queries + 1,)`` offsets. Terms not in the index are left out, so a
        query of none of them has an empty row.

    Raises
    ------
    TypeError
        ``queries`` is not a sequence of mappings, a term is not a str or a weight not a
        real number.
    ValueError
        A weight that is not finite, not > 0, or outside float32's normal range.
    """
    if isinstance(queries, (str, bytes, Mapping)) or not isinstance(queries, Sequence):
        raise TypeError(
            f"weighted queries must be a sequence of {{term: weight}} mappings (a list of "
            f"dicts, one per query), got {type(queries).__name__}"
        )
    terms: list[int] = []
    weights: list[float] = []
    offsets = [0]
    for position, query in enumerate(queries):
        if not isinstance(query, Mapping):
            raise TypeError(
                f"weighted query {position} is {type(query).__name__}, expected a mapping "
                "of analysed term to weight"
            )
        row: list[tuple[int, float]] = []
        for term, weight in query.items():
            if not isinstance(term, str):
                raise TypeError(
                    f"weighted query {position}: term {term!r} is {type(term).__name__}, "
                    "expected str"
                )
            if isinstance(weight, bool) or not isinstance(weight, (int, float, np.number)):
                raise TypeError(
                    f"weighted query {position}: the weight of {term!r} is "
                    f"{type(weight).__name__}, expected a real number"
                )
            if not _LOWEST <= weight <= _HIGHEST:
                raise ValueError(
                    f"weighted query {position}: the weight of {term!r} is {weight}; weights "
                    f"must be finite and in [{_LOWEST:.3g}, {_HIGHEST:.3g}] (float32; leave a "
                    "term out rather than weigh it 0)"
                )
            t = term_id(term)
            if t >= 0:
                row.append((t, float(weight)))
        row.sort()
        terms.extend(t for t, _ in row)
        weights.extend(w for _, w in row)
        offsets.append(len(terms))
    return (
        np.asarray(terms, dtype=np.int32),
        np.asarray(weights, dtype=np.float32),
        np.asarray(offsets, dtype=np.int64),
    )
