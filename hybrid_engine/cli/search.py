"""``hybrid-engine search INDEX QUERY...``: query a saved BM25 index."""

from __future__ import annotations

import argparse
from typing import Any

from hybrid_engine.cli._output import print_hits
from hybrid_engine.lexical.bm25 import BM25Index


def add_parser(subparsers: Any) -> None:
    """Add ``search`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser("search", help="query a saved index")
    p.add_argument("index", help="index directory")
    p.add_argument("queries", nargs="+", help="query texts")
    p.add_argument("-k", type=int, default=10, help="hits per query")
    p.add_argument("--mmap", action="store_true", help="memory-map the index")
    p.add_argument("--json", action="store_true", help="print JSON instead of a listing")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the index and print the hits of every query."""
    index = BM25Index.load(args.index, mmap=args.mmap)
    print_hits(index, args.queries, args.k, args.json)
    return 0
