"""What the commands print: metric tables and search hits."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.lexical.bm25 import BM25Index

LABEL_WIDTH = 12
"""Width of a table's first column, the row's name."""


def print_table(rows: Mapping[str, Mapping[str, float]], columns: list[str] | None = None) -> None:
    """One line per row, a header of ``columns`` above them.

    Parameters
    ----------
    rows : mapping of str to mapping of str to float
        Row name (a retriever) to its values by column.
    columns : list of str, optional
        Columns in order; the first row's keys when None. A row without a column shows ``-``.
    """
    if columns is None:
        columns = list(next(iter(rows.values())))
    widths = {c: max(len(c), 8) + 2 for c in columns}
    header = f"{'retriever':<{LABEL_WIDTH}}" + "".join(f"{c:>{widths[c]}}" for c in columns)
    print(header)
    print("-" * len(header))
    for name, values in rows.items():
        cells = "".join(
            f"{values[c]:>{widths[c]}.{_digits(c)}f}" if c in values else f"{'-':>{widths[c]}}"
            for c in columns
        )
        print(f"{name:<{LABEL_WIDTH}}{cells}")


def print_eval_tables(rows: Mapping[str, Mapping[str, float]]) -> None:
    """``eval``'s rows (``RetrieverReport.to_dict``): quality, throughput and whole-call
    latency; then per-stage latency of the rows that have stages."""
    every_column = dict.fromkeys(c for row in rows.values() for c in row)
    stage_columns = [c for c in every_column if c.endswith(("_p50_ms", "_p95_ms"))]
    main_columns = [c for c in next(iter(rows.values())) if c not in stage_columns]
    print_table(rows, main_columns)
    staged = {name: row for name, row in rows.items() if any(c in row for c in stage_columns)}
    if staged:
        print("\nper-stage latency, one query per call (ms)")
        print_table(staged, stage_columns)


def _digits(column: str) -> int:
    """Decimals shown: 1 for throughput, 2 for milliseconds, 4 for quality metrics."""
    return 1 if column == "queries_per_s" else 2 if column.endswith("_ms") else 4


def print_hits(
    index: BM25Index | DenseIndex,
    queries: Sequence[str],
    k: int,
    as_json: bool,
    titles: dict[str, str] | None = None,
) -> None:
    """Search ``queries`` and print each one's top ``k`` (rank, score, id and title), or all
    of them as one JSON list."""
    result = index.search(list(queries), k)
    rows = [
        [
            {"rank": r + 1, "id": index.doc_ids[int(i)], "score": float(s)}
            for r, (i, s) in enumerate(zip(ids, scores, strict=True))
            if i >= 0
        ]
        for ids, scores in zip(result.ids, result.scores, strict=True)
    ]
    if as_json:
        listing = [{"query": q, "hits": h} for q, h in zip(queries, rows, strict=True)]
        print(json.dumps(listing, indent=2))
        return
    for query, hits in zip(queries, rows, strict=True):
        print(f"\nquery: {query}")
        if not hits:
            print("  (no document holds any query term)")
        for hit in hits:
            title = (titles or {}).get(str(hit["id"]), "")
            title = title if len(title) <= 70 else title[:67] + "..."
            print(f"  {hit['rank']:>3}. {hit['score']:8.4f}  {hit['id']:<12} {title}")
