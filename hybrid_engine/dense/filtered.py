"""Dense search under an ``allowed`` mask: only allowed documents may be returned, and a row
has ``min(k, n_allowed)`` hits, as if the index held the allowed vectors alone.

Two ways, picked per batch by a cost model (``plan``):

* exact over the allowed rows: ``knn.exact_search`` with ``rows``, which scores those rows in
  place (a masked row is never read);
* the graph, oversampled: ask its walk for ``list_size`` candidates (its ``ef`` rises to match),
  keep the allowed ones and rank them by exact score. ``list_size`` is chosen so that, for a
  mask unrelated to the query, fewer than ``k`` allowed candidates is a 3-sigma event; a query
  that still gets fewer (a mask that avoids its neighbourhood) is searched exactly over the
  allowed rows.

hnswlib's own ``filter=`` callback was measured against oversampling on the same graph, same
``k`` and ``ef`` (``benchmarks/test_dense_filter_bench.py``,
``benchmarks/reports/bench_dense_filter.py``, docs/dense.md). It calls a Python function (holding
the GIL) for each candidate and searches on
until ``ef`` allowed ones are found, about ``ef / s`` nodes at selectivity ``s``, and raises
when fewer than ``k`` pass: it was 1.2x to 9x slower than oversampling through the graph, and
2x to 1,200x slower than the exact path at the selectivities where that is taken. Its deeper
search finds more of the true neighbours only where the graph itself is weak (random 384-d
vectors: recall@10 0.61 unfiltered at ``ef`` 256); oversampling keeps about the unfiltered
recall of the graph at the same ``ef``, which is what ``ef_search`` asks for.
"""

from __future__ import annotations

import math

SHORTFALL_SIGMAS = 3.0
"""How far below its mean (in standard deviations) the count of allowed candidates in a graph
list may fall before it drops under ``k``: the list is sized for this (``list_size``)."""
GRAPH_ROWS_PER_LINK = 0.5
"""Cost of one graph search, in exactly scored rows, per entry of the candidate list (``ef``)
and per link of a level-0 node (``2 * m``); see ``graph_cost``.

Measured (one query, one thread, 384-d, m=16, 2-core machine,
``benchmarks/reports/bench_dense_filter.py --calibrate``): 0.40-0.47 on 100,000 synthetic vectors
for lists of 10 to 2,048 (ef 256 to
2,048: 0.7 to 5.8 ms, an exact row 0.1 us), 0.12-0.24 on the 5,183 SciFact embeddings (a small
graph stays in cache). 0.5 errs towards the exact path, which has no approximation: at
``ef_search=256`` the graph is used from 4,096 allowed documents on."""


def list_size(k: int, n_allowed: int, n: int) -> int:
    """Graph candidates to ask for so that at least ``k`` of them are allowed.

    If a fraction ``s = n_allowed / n`` of the documents is allowed, independently of the
    query, the allowed candidates in a list of ``L`` follow Binomial(L, s). ``L`` is the least
    one whose mean is ``z = SHORTFALL_SIGMAS`` standard deviations above ``k`` (normal
    approximation): ``L s - z sqrt(L s (1 - s)) >= k``. For ``k = 10`` that is 2.4x ``k / s``
    at small ``s``, 39 at ``s = 0.5``. At most ``n``.
    """
    s = n_allowed / n
    z = SHORTFALL_SIGMAS * math.sqrt(1 - s)
    root = (z + math.sqrt(z * z + 4 * k)) / 2  # sqrt of the least mean L s
    return min(n, math.ceil(root * root / s))


def graph_cost(list_size: int, ef_search: int, m: int) -> float:
    """Estimated cost of one graph query, in rows of the exact path.

    hnswlib expands about ``ef`` nodes of level 0 (``ef = max(ef_search, list_size)``) and
    computes a distance to each new neighbour among their ``2 * m`` links; a distance through
    the graph costs more than a row of the exact path (random access, heap updates) but most
    neighbours are already visited. ``GRAPH_ROWS_PER_LINK`` folds both in, measured so that the
    estimate matches timed searches (``benchmarks/reports/bench_dense_filter.py --calibrate``).
    """
    return GRAPH_ROWS_PER_LINK * max(ef_search, list_size) * 2 * m


def plan(k: int, n_allowed: int, n: int, ef_search: int, m: int) -> int | None:
    """The graph list size for a filtered search, or None when exact over the allowed rows
    is cheaper (or no list of the graph could hold ``k`` allowed hits for certain)."""
    size = list_size(k, n_allowed, n)
    if n_allowed <= k or size >= n or n_allowed <= graph_cost(size, ef_search, m):
        return None
    return size
