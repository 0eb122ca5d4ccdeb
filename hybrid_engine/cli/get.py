"""``hybrid-engine get INDEX ID...``: print documents of a saved index by id."""

from __future__ import annotations

import argparse
import json
from typing import Any

from hybrid_engine.cli._engine import load_engine
from hybrid_engine.cli._options import add_threads_option
from hybrid_engine.errors import UnknownIdError
from hybrid_engine.ids import check_id
from hybrid_engine.result import Hit


def add_parser(subparsers: Any) -> None:
    """Add ``get`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser("get", help="print documents of a saved index by id")
    p.add_argument("index", help="index directory")
    p.add_argument("ids", nargs="+", metavar="ID", help="document ids")
    p.add_argument(
        "--json",
        action="store_true",
        help='one JSON object per document and line: {"id", "title", "text", "metadata"}',
    )
    p.add_argument(
        "--missing-ok",
        action="store_true",
        help="leave out the ids no document has (default: any is an error, nothing printed)",
    )
    add_threads_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the index (memory-mapped) and print each document found, in the order of the ids
    (the last commit's: staged changes of a running writer are not seen)."""
    ids = [check_id(doc_id, f"ID {i}") for i, doc_id in enumerate(args.ids, 1)]
    engine = load_engine(args.index, variant=None, num_threads=args.threads, mmap=True)
    hits = engine.get(ids, missing_ok=True)
    if not args.missing_ok:
        found = {hit.id for hit in hits}
        unknown = [doc_id for doc_id in ids if doc_id not in found]
        if unknown:
            raise UnknownIdError(
                f"document id {unknown[0]!r} is not in the index"
                f"{f' (nor {len(unknown) - 1} more)' if len(unknown) > 1 else ''}; pass "
                "--missing-ok to leave unknown ids out"
            )
    for hit in hits:
        print(document_json(hit) if args.json else document_listing(hit))
    return 0


def document_json(hit: Hit) -> str:
    """``{"id", "title", "text", "metadata"}`` as one line of JSON."""
    record = {"id": hit.id, "title": hit.title, "text": hit.text, "metadata": hit.metadata}
    return json.dumps(record, ensure_ascii=False)


def document_listing(hit: Hit) -> str:
    """The document as lines ``id:``, ``title:``, ``text:`` and ``metadata:`` (JSON), then a
    blank line."""
    metadata = json.dumps(hit.metadata, ensure_ascii=False)
    return f"id: {hit.id}\ntitle: {hit.title}\ntext: {hit.text}\nmetadata: {metadata}\n"
