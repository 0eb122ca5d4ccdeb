"""Facet counts: how many of a search's matching documents hold each value of a metadata
field.

"Matching" is what the search considered: the fused candidates, that is every document some
leg handed to fusion (each leg's top ``depth``, inside the filter), less those under
``min_score``. For BM25 alone that is the documents holding a query term, up to ``depth`` of
them; for the dense leg, which ranks every document, it is its top ``depth``: raise ``depth``
to count over more. A document counts once per distinct value it holds (each item of a
list); a document without the field counts nowhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from hybrid_engine.protocols import FieldReader
from hybrid_engine.result import PAD_ID

MAX_FACETS = 16
"""Most fields one search counts."""
Facets = dict[str, list[tuple[Any, int]]]
"""Field to ``(value, count)`` pairs, most frequent first (ties by value's text)."""


def check_facets(facets: object) -> tuple[str, ...] | None:
    """``facets`` as a tuple of field names, or None; TypeError or ValueError naming the
    problem."""
    if facets is None:
        return None
    if isinstance(facets, str) or not isinstance(facets, Sequence):
        raise TypeError(
            f"facets must be a list of metadata field names, got {facets!r}; e.g. "
            "facets=['lang', 'year']"
        )
    names = tuple(facets)
    if not names or len(names) > MAX_FACETS:
        raise ValueError(f"facets must name 1 to {MAX_FACETS} fields, got {len(names)}")
    for name in names:
        if not isinstance(name, str) or not name:
            raise TypeError(f"facets must be non-empty field names (str), got {name!r}")
    return names


def count_facets(snapshot: FieldReader, ids: np.ndarray, fields: tuple[str, ...]) -> list[Facets]:
    """Per row of ``ids`` (positions, padding -1), the counts of each field's values over its
    documents. Values of other types stay apart (``1``, ``1.0`` and ``True`` are three)."""
    out: list[Facets] = []
    for row in ids:
        positions = row[row != PAD_ID]
        counts: Facets = {}
        for field in fields:
            counter: Counter[tuple[str, Any]] = Counter()
            for held in snapshot.field_values(field, positions):
                counter.update({(type(value).__name__, value) for value in held})
            pairs = [(value, n) for (_, value), n in counter.items()]
            counts[field] = sorted(pairs, key=lambda pair: (-pair[1], repr(pair[0])))
        out.append(counts)
    return out
