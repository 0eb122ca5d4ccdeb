"""``hybrid-engine search INDEX QUERY...``: query a saved engine, print its hits."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any

from hybrid_engine.cli import _sharded as sharded
from hybrid_engine.cli._engine import load_searched
from hybrid_engine.cli._engine import reranker as load_reranker
from hybrid_engine.cli._live import STDIN
from hybrid_engine.cli._options import (
    add_loaded_models_options,
    add_loading_options,
    add_ray_option,
    add_threads_option,
)
from hybrid_engine.cli._output import hits_json, one_line, print_facets, print_hits
from hybrid_engine.cli._values import (
    field_list,
    json_object,
    non_negative_int,
    parse_weights,
    positive_float,
    positive_int,
    unit_float,
)
from hybrid_engine.distributed.result import ShardedResult
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.metadata import Filter
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD, METHODS
from hybrid_engine.pipeline.rerank import RERANK_DEPTH
from hybrid_engine.pipeline.result import HybridResult
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH


def add_parser(subparsers: Any) -> None:
    """Add ``search`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser("search", help="query an index saved by `hybrid-engine index`")
    p.add_argument("index", help="index directory")
    p.add_argument("queries", nargs="*", help="query texts (or give --queries)")
    p.add_argument(
        "--queries",
        dest="queries_file",
        default=None,
        metavar="FILE",
        help=f"more queries, one per line (blank lines skipped; {STDIN}: standard input)",
    )
    p.add_argument(
        "-k", type=positive_int, default=10, help="hits per query (default: %(default)s)"
    )
    p.add_argument(
        "--offset",
        type=non_negative_int,
        default=0,
        help="hits skipped before the k shown: --offset 10 -k 10 is the second page (pages are "
        "slices of one ranking while offset + k <= --depth)",
    )
    p.add_argument(
        "--facets",
        type=field_list,
        default=None,
        metavar="FIELD,...",
        help="count the values of these metadata fields over the documents each query matched",
    )
    p.add_argument(
        "--highlight",
        action="store_true",
        help="show each hit's snippet around its matching words, marked [like this] (in --json: "
        "HTML-escaped, in <mark>)",
    )
    p.add_argument(
        "--explain",
        action="store_true",
        help="show each hit's rank and score in every leg",
    )
    p.add_argument(
        "--decay",
        type=json_object,
        default=None,
        metavar="JSON",
        help='rescore by a numeric or date field, e.g. \'{"field": "year", "origin": 2024, '
        '"scale": 5}\' (docs/fusion.md, Rescoring)',
    )
    p.add_argument(
        "--expression",
        default=None,
        help="rescore by a formula over score, fused, decay and numeric fields, e.g. "
        "'score * decay'",
    )
    p.add_argument(
        "--min-score",
        type=unit_float,
        default=None,
        help="leave out hits whose relevance (the fused score on the [0, 1] scale of every "
        "fusion method, docs/fusion.md) is below it",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help='one JSON object per query and line: {"query", "hits": [{"id", "score", "title", '
        '"text", "metadata"}], "timings_ms"}',
    )
    p.add_argument(
        "--filter",
        default=None,
        metavar="JSON",
        help='only documents whose metadata match, e.g. \'{"year": {"$gte": 2020}}\' '
        "(docs/filters.md)",
    )
    p.add_argument(
        "--rerank",
        type=int,
        default=None,
        metavar="N",
        help=f"rerank the fused top N with --reranker (default with --reranker: {RERANK_DEPTH})",
    )
    p.add_argument(
        "--fusion",
        choices=METHODS,
        default=DEFAULT_METHOD,
        help="how the legs' hits are fused (default: %(default)s; docs/fusion.md)",
    )
    p.add_argument(
        "--weights",
        type=parse_weights,
        default=None,
        metavar="LEG=W,...",
        help="fusion weight per leg, e.g. bm25=1,dense=2 (a leg left out weighs 1)",
    )
    p.add_argument(
        "--depth",
        type=positive_int,
        default=DEFAULT_DEPTH,
        help="hits each leg hands to fusion (default: %(default)s; at least -k are used)",
    )
    p.add_argument(
        "--mmr",
        type=unit_float,
        default=None,
        metavar="LAMBDA",
        help="re-order the hits by maximal marginal relevance, LAMBDA in [0, 1] (1: relevance "
        "only, lower: more diverse); needs the dense leg",
    )
    p.add_argument(
        "--budget-ms",
        type=positive_float,
        default=None,
        metavar="MS",
        help="milliseconds a query should take: the costliest optional stages are skipped "
        "when they would overrun it (docs/degradation.md)",
    )
    add_loaded_models_options(p)
    add_loading_options(p)
    add_threads_option(p)
    add_ray_option(p)
    p.set_defaults(func=run)


def parse_filter(text: str | None) -> Filter | None:
    """``--filter``'s JSON compiled; ValueError or TypeError naming ``--filter`` when it is
    not valid."""
    if text is None:
        return None
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"--filter is not JSON ({exc}): give a JSON object") from None
    if not isinstance(spec, dict):
        raise TypeError(f"--filter must be a JSON object, got {type(spec).__name__}")
    try:
        return Filter.compile(spec)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"--filter: {exc}") from None


def read_queries(args: argparse.Namespace) -> list[str]:
    """The queries on the command line, then those of ``--queries`` (one per line, ends
    trimmed, blank lines skipped).

    Raises
    ------
    ValueError
        No query at all, or a ``--queries`` line that is not UTF-8 (naming the file and line).
    OSError
        The ``--queries`` file cannot be read.
    """
    queries = list(args.queries)
    if args.queries_file == STDIN:
        queries.extend(_lines(getattr(sys.stdin, "buffer", sys.stdin), "<stdin>"))
    elif args.queries_file is not None:
        with open(args.queries_file, "rb") as lines:
            queries.extend(_lines(lines, args.queries_file))
    if not queries:
        raise ValueError("no query: give them as arguments or in --queries FILE (- for stdin)")
    return queries


def _lines(lines: Iterable[str | bytes], source: str) -> list[str]:
    """The non-blank lines of a queries file, trimmed; bytes decoded as UTF-8."""
    texts = []
    for number, line in enumerate(lines, 1):
        try:
            text = line if isinstance(line, str) else line.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(
                f"--queries {source}:{number}: not UTF-8; save the file as UTF-8"
            ) from None
        if text.strip():
            texts.append(text.strip())
    return texts


def check_legs(args: argparse.Namespace, engine: HybridIndex) -> None:
    """``--weights`` and ``--mmr`` against the legs of the loaded index (ValueError naming
    the flag)."""
    legs = engine.retrievers
    if args.weights is not None:
        unknown = [leg for leg in args.weights if leg not in legs]
        if unknown:
            raise ValueError(
                f"--weights names {', '.join(unknown)}, which this index does not combine; "
                f"its legs: {', '.join(legs)}"
            )
    if args.mmr is not None and "dense" not in legs:
        raise ValueError(
            f"--mmr needs the dense leg (it compares documents by their vectors); this index "
            f"has {', '.join(legs)}"
        )


def run(args: argparse.Namespace) -> int:
    """Search each query on its own (so its stage timings are its own) and print its hits."""
    queries = read_queries(args)
    rerank = args.rerank
    cross_encoder = None
    if args.reranker is not None or rerank is not None:
        cross_encoder = load_reranker(args)  # first: no --reranker or a bad one fails at once
        rerank = RERANK_DEPTH if rerank is None else rerank
    where = parse_filter(args.filter)
    if sharded.is_sharded(args.index):
        return run_sharded(args, queries, cross_encoder, rerank, where)
    engine = load_searched(args)
    check_legs(args, engine)
    if cross_encoder is not None:
        engine = engine.with_reranker(cross_encoder)
    for query in queries:
        result = engine.search([query], args.k, **search_options(args, rerank, where))
        print_result(args, query, result, filtered=where is not None)
    return 0


def print_result(
    args: argparse.Namespace,
    query: str,
    result: HybridResult | ShardedResult,
    *,
    filtered: bool,
) -> None:
    """One query's result as ``--json`` or text asks: its hits, with ``--highlight``'s
    snippets, ``--explain``'s places in each leg and ``--facets``' counts."""
    hits = result.hits()[0]
    facets = result.facets[0] if result.facets is not None else None
    legs = result.explain()[0] if args.explain else None
    if args.json:
        snippets = result.highlights()[0] if args.highlight else None
        print(hits_json(query, hits, result.timings, facets, snippets, legs))
        return
    marked = result.highlights(pre="[", post="]", escape=False) if args.highlight else None
    print_hits(
        query,
        hits,
        result.timings,
        filtered=filtered,
        offset=args.offset,
        snippets=[one_line(s) for s in marked[0]] if marked is not None else None,
        legs=legs,
    )
    if facets is not None:
        print_facets(facets)


def search_options(
    args: argparse.Namespace, rerank: int | None, where: Filter | None
) -> dict[str, Any]:
    """The ``search`` keywords of the command line, the same for one index and a sharded one
    (``plan.SEARCH_OPTIONS``)."""
    return {
        "fusion": args.fusion,
        "weights": args.weights,
        "depth": args.depth,
        "rerank": rerank,
        "mmr": args.mmr,
        "filter": where,
        "num_threads": args.threads,
        "offset": args.offset,
        "min_score": args.min_score,
        "budget_ms": args.budget_ms,
        "facets": args.facets,
        "decay": args.decay,
        "expression": args.expression,
    }


NOT_SHARDED = (
    ("variant", "--variant"),
    ("mmap", "--mmap"),
    ("allow_degraded", "--allow-degraded"),
)
"""The options ``search`` has for one index and not for a sharded one (how one index is
loaded: the shards load as the index was built), by ``args`` attribute: refused before the
shards are opened."""


def run_sharded(
    args: argparse.Namespace,
    queries: list[str],
    cross_encoder: CrossEncoder | None,
    rerank: int | None,
    where: Filter | None,
) -> int:
    """``search`` on a sharded index: each query over every shard, printed as for one index,
    with the shards that did not answer named."""
    why = "not available with a sharded index (its shards load as it was built); leave them out"
    sharded.refuse_options(args, NOT_SHARDED, why)
    with sharded.opened(args.index, args.ray_address, cross_encoder) as index:
        for query in queries:
            result = index.search([query], args.k, **search_options(args, rerank, where))
            print_result(args, query, result, filtered=where is not None)
            if result.missing_shards:
                print(
                    f"missing shard(s) {result.missing_shards}: these hits are from the others",
                    file=sys.stderr,
                )
    return 0
