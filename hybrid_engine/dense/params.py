"""The build parameters of a dense index and their defaults, with the measurements behind them."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hybrid_engine.checks import check_int
from hybrid_engine.dense.quantization import QUANTIZATIONS

METRICS = ("cosine", "ip")
DEFAULT_EXACT_THRESHOLD = 5_000
"""Up to this many vectors an index builds no graph and every search is exact.

Where HNSW starts to beat the exact path for one query (384-d vectors, 2-core machine,
``benchmarks/reports/bench_dense_recall.py``): the two are within noise of each other up to 5,000
vectors (about 0.2 ms), and the graph is 1.5x faster at 7,000, 1.9x at 10,000, 2.9x at 20,000. The
exact path's cost grows with ``n * dim``: for 768-d vectors the crossover comes at about half
as many.
"""
DEFAULT_EF_SEARCH = {None: 256, "int8": 256, "binary": 448}
"""HNSW candidate list size of a search (hnswlib's ``ef``; at least ``k`` is used), by
quantization.

Measured on real all-MiniLM-L6-v2 embeddings of 100,000 scale documents (every 2nd of gcide,
wordnet, Wikipedia summaries) with 1,000 MS MARCO queries, M=16, ef_construction=200
(``benchmarks/reports/embed_scale.py``, then ``benchmarks/reports/bench_dense_recall.py``),
recall@10 against the exact path: ef 64 0.945, 128 0.979, 192 0.989, 256 0.992-0.993 (two builds),
384 0.996. At 256
a query takes about 1 ms against 7 ms for the exact path. Synthetic topic-clustered vectors are
easier (0.99 at ef 24-64): real text embeddings need the larger list.

Binary codes rank the walk's list coarsely, so they take a longer one, every candidate of it
rescored: recall@10 against exact float32 search on the 1M derived scale vectors
(``benchmarks/reports/quant_report.py --n-docs 1000000``, 1,000 MS MARCO queries, k=10), ef 256
with 20 candidates per hit 0.9707-0.9718 (two builds), 320/32 0.9771-0.9804, 384/38 0.9816, 448/45
0.9857, 512/51 0.9887 (int8 at 256/2: 0.9825). 448 is the first with a margin over the 0.98
a default needs, at 1M; a query's p50 there 1.31 ms against 0.78 at 256.
"""


DEFAULT_OVERSAMPLE = {None: 1.0, "int8": 3.0, "binary": 45.0}
"""Graph candidates rescored with the float32 vectors per hit asked for, by quantization (a
float32 walk ranks by the exact scores' own order: one per hit is enough); no more than the
walk's list are rescored (``DenseParams.candidates``).

Measured on the 253,928 scale documents' all-MiniLM-L6-v2 int8 vectors, 1,000 MS MARCO queries,
k=10, M=16, ef_construction=200, ef_search=256, recall@10 against exact float32 search
(docs/memory.md): int8 0.9841 at 1, 0.9892 from 2 to 20 (the graph's own limit at this list
size); binary 0.6753 at 1, 0.9181 at 3, 0.9584 at 5, 0.9783 at 10, 0.9830 at 20. A query's p50
grew by under 0.3 ms from 1 to 20. 3 leaves int8 a margin. Binary codes need more at a
million vectors (``DEFAULT_EF_SEARCH``): 45 with their list of 448 rescores the whole list
for ``k=10``."""


@dataclass(frozen=True)
class DenseParams:
    """Build parameters of a ``DenseIndex``, checked (see ``DenseIndex.build``); ``oversample``
    None takes the quantization's ``DEFAULT_OVERSAMPLE``."""

    metric: str
    m: int
    ef_construction: int
    exact_threshold: int
    quantization: str | None = None
    oversample: float | None = None

    def __post_init__(self) -> None:
        if self.metric not in METRICS:
            raise ValueError(f"unknown metric {self.metric!r}; choose one of {list(METRICS)}")
        check_int("m", self.m, 2, 10_000)  # hnswlib caps M at 10,000
        check_int("ef_construction", self.ef_construction, 1)
        check_int("exact_threshold", self.exact_threshold, 0)
        if self.quantization is not None and self.quantization not in QUANTIZATIONS:
            raise ValueError(
                f"unknown quantization {self.quantization!r}; choose None (float32) or one of "
                f"{list(QUANTIZATIONS)}"
            )
        if self.oversample is None:
            object.__setattr__(self, "oversample", DEFAULT_OVERSAMPLE[self.quantization])
        oversample = self.oversample
        if isinstance(oversample, bool) or not isinstance(oversample, (int, float)):
            raise TypeError(f"oversample must be a number, got {type(oversample).__name__}")
        if not (math.isfinite(oversample) and oversample >= 1):
            raise ValueError(f"oversample must be a finite number >= 1, got {oversample!r}")
        object.__setattr__(self, "oversample", float(oversample))

    def candidates(self, k: int, n: int, ef_search: int) -> int:
        """Graph candidates to rescore for ``k`` hits among ``n`` vectors: ``oversample * k``,
        but no more than the walk's list (``ef_search``) unless ``k`` itself is more, so
        that a deep request (a hybrid's legs ask for 100) does not lengthen the walk past
        its list, and never more than ``n``."""
        assert self.oversample is not None
        wanted = min(math.ceil(k * self.oversample), max(k, ef_search))
        return min(n, max(k, wanted))


def checked_ef_search(ef_search: int | None, quantization: str | None) -> int:
    """``ef_search`` checked (an int >= 1), or the quantization's ``DEFAULT_EF_SEARCH`` when
    None."""
    if ef_search is None:
        return DEFAULT_EF_SEARCH[quantization]
    return check_int("ef_search", ef_search, 1)
