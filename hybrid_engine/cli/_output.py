"""What the commands print: metric tables, search hits as a listing or as JSON lines, and the
JSON files of ``--json FILE``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path

from hybrid_engine.pipeline.facets import Facets
from hybrid_engine.result import Hit

SNIPPET_CHARS = 160
"""Characters of a hit's text shown in a listing (one line)."""
LABEL_WIDTH = 12
"""Least width of a table's first column, the row's name (wider for a longer name)."""


def write_json(path: str, figures: object) -> None:
    """Write ``figures`` to ``path`` as indented JSON (``--json FILE``) and say so."""
    Path(path).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {path}")


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
    label = max([LABEL_WIDTH, *(len(name) + 1 for name in rows)])
    header = f"{'retriever':<{label}}" + "".join(f"{c:>{widths[c]}}" for c in columns)
    print(header)
    print("-" * len(header))
    for name, values in rows.items():
        cells = "".join(
            f"{values[c]:>{widths[c]}.{_digits(c)}f}" if c in values else f"{'-':>{widths[c]}}"
            for c in columns
        )
        print(f"{name:<{label}}{cells}")


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


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` with every run of whitespace as one space, cut to ``limit`` characters (an
    ellipsis ending the cut)."""
    line = " ".join(text.split())
    if limit is not None and len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line


def format_timings(timings: Mapping[str, float]) -> str:
    """Milliseconds per stage, e.g. ``"bm25 0.4 ms, dense 6.1 ms, total 6.9 ms"``."""
    return ", ".join(f"{stage} {ms:.1f} ms" for stage, ms in timings.items())


def print_hits(
    query: str,
    hits: list[Hit],
    timings: Mapping[str, float],
    *,
    filtered: bool = False,
    offset: int = 0,
    snippets: list[str] | None = None,
    legs: list[dict[str, tuple[int, float]]] | None = None,
) -> None:
    """A listing: the query and its stage timings, then per hit its rank (from ``offset +
    1``: a later page), id, score and title, its place in each leg (``legs``, when given),
    and a one-line snippet of its text (``snippets``, highlighted ones, when given); a row
    without hits says why it may be empty (``filtered``: a filter was given)."""
    print(f"\nquery: {query}\n  ({format_timings(timings)})")
    if not hits:
        why = (
            "no document matches the filter, or none that does holds a query term"
            if filtered
            else "no document holds any query term"
        )
        print(f"  (no hits: {why})")
    for i, hit in enumerate(hits):
        print(
            f"  {offset + i + 1:>3}. {hit.id:<12} {hit.score:8.4f}  {one_line(hit.title)}".rstrip()
        )
        if legs is not None:
            places = legs[i].items()
            print(
                "       "
                + " · ".join(f"{leg} #{rank} ({score:.3f})" for leg, (rank, score) in places)
            )
        snippet = snippets[i] if snippets is not None else one_line(hit.text, SNIPPET_CHARS)
        print(f"       {snippet}")


def hits_json(
    query: str,
    hits: list[Hit],
    timings: Mapping[str, float],
    facets: Facets | None = None,
    snippets: list[str] | None = None,
    legs: list[dict[str, tuple[int, float]]] | None = None,
) -> str:
    """One query's hits as one line of JSON: ``{"query", "hits": [{"id", "score", "title",
    "text", "metadata"}], "timings_ms": {stage: ms}}``, each hit with ``"highlight"`` when
    ``snippets`` are given and ``"legs": {leg: {"rank", "score"}}`` when ``legs`` are (as the
    server sends them), and ``"facets": {field: [{"value", "count"}]}`` when ``facets`` are."""
    records = [asdict(hit) for hit in hits]
    for i, record_hit in enumerate(records):
        if snippets is not None:
            record_hit["highlight"] = snippets[i]
        if legs is not None:
            record_hit["legs"] = {
                leg: {"rank": rank, "score": score} for leg, (rank, score) in legs[i].items()
            }
    record: dict[str, object] = {
        "query": query,
        "hits": records,
        "timings_ms": dict(timings),
    }
    if facets is not None:
        record["facets"] = {
            name: [{"value": value, "count": n} for value, n in pairs]
            for name, pairs in facets.items()
        }
    return json.dumps(record, ensure_ascii=False)


def print_facets(facets: Facets) -> None:
    """Each field's value counts, most frequent first, one line per field."""
    for name, pairs in facets.items():
        counts = ", ".join(f"{value!r} {n}" for value, n in pairs) or "(no document holds it)"
        print(f"  facet {name}: {counts}")
