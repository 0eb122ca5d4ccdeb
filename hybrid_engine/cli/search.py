"""``hybrid-engine search INDEX QUERY...``: query a saved engine, print its hits."""

from __future__ import annotations

import argparse
from typing import Any

from hybrid_engine.cli._engine import add_reranker_options, add_variant_option, load_engine
from hybrid_engine.cli._engine import reranker as load_reranker
from hybrid_engine.cli._output import hits_json, hits_of, print_hits
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
        '"text"}], "timings_ms"}',
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
    p.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Search each query on its own (so its stage timings are its own) and print its hits."""
    rerank = args.rerank
    cross_encoder = None
    if args.reranker is not None or rerank is not None:
        cross_encoder = load_reranker(args)  # first: no --reranker or a bad one fails at once
        rerank = RERANK_DEPTH if rerank is None else rerank
    engine = load_engine(args.index, variant=args.variant, num_threads=args.threads, mmap=args.mmap)
    if cross_encoder is not None:
        engine = engine.with_reranker(cross_encoder)
    for query in args.queries:
        result = engine.search([query], args.k, rerank=rerank, num_threads=args.threads)
        hits = hits_of(engine, result)
        if args.json:
            print(hits_json(query, hits, result.timings))
        else:
            print_hits(query, hits, result.timings)
    return 0
