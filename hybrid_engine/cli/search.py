"""``hybrid-engine search INDEX QUERY...``: query a saved engine, print its hits."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hybrid_engine.cli._engine import (
    add_degraded_option,
    add_reranker_options,
    add_variant_option,
    load_engine,
)
from hybrid_engine.cli._engine import reranker as load_reranker
from hybrid_engine.cli._output import hits_json, print_hits
from hybrid_engine.metadata import Filter
from hybrid_engine.pipeline.rerank import RERANK_DEPTH


def add_parser(subparsers: Any) -> None:
    """Add ``search`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser("search", help="query an index saved by `hybrid-engine index`")
    p.add_argument("index", help="index directory")
    p.add_argument("queries", nargs="+", help="query texts")
    p.add_argument("-k", type=int, default=10, help="hits per query (default: %(default)s)")
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
    add_reranker_options(p)
    add_variant_option(
        p, "bi-encoder variant to load (default: the one the index recorded)", default=None
    )
    p.add_argument("--mmap", action="store_true", help="memory-map the index")
    add_degraded_option(p)
    p.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
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


def run(args: argparse.Namespace) -> int:
    """Search each query on its own (so its stage timings are its own) and print its hits."""
    rerank = args.rerank
    cross_encoder = None
    if args.reranker is not None or rerank is not None:
        cross_encoder = load_reranker(args)  # first: no --reranker or a bad one fails at once
        rerank = RERANK_DEPTH if rerank is None else rerank
    where = parse_filter(args.filter)
    engine = load_engine(
        args.index,
        variant=args.variant,
        num_threads=args.threads,
        mmap=args.mmap,
        allow_degraded=args.allow_degraded,
    )
    if cross_encoder is not None:
        engine = engine.with_reranker(cross_encoder)
    for query in args.queries:
        result = engine.search(
            [query], args.k, rerank=rerank, filter=where, num_threads=args.threads
        )
        hits = result.hits()[0]
        if args.json:
            print(hits_json(query, hits, result.timings))
        else:
            print_hits(query, hits, result.timings)
    return 0
