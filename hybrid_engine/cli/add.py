"""``hybrid-engine add INDEX FILE``: stage a JSONL file's documents into a saved live index
and commit them once."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from hybrid_engine.cli._engine import load_engine
from hybrid_engine.cli._live import STDIN, add_index_arguments, summary
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.evaluation import load_corpus, read_corpus


def add_parser(subparsers: Any) -> None:
    """Add ``add`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser(
        "add", help="add a JSONL file's documents to a saved index and commit them"
    )
    add_index_arguments(p)
    p.add_argument(
        "file",
        help="corpus.jsonl[.gz] ({_id, title, text} per line, other keys as metadata), its "
        f"folder, or {STDIN} for standard input",
    )
    p.add_argument(
        "--upsert",
        action="store_true",
        help="replace the documents whose ids are indexed (default: such an id is an error)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read the documents, then load the index, stage them, commit once and print one line.

    The write lock is held from the staging to the end of the commit. On any error nothing
    is committed: the index keeps its last commit.
    """
    if args.file == STDIN:
        documents = read_corpus(sys.stdin, "<stdin>")
    else:
        documents = load_corpus(args.file)  # before the index: a bad file fails at once
    engine = load_engine(args.index, variant=None, num_threads=args.threads, mmap=False)
    with engine:
        stage = engine.upsert if args.upsert else engine.add
        count = stage(documents)
        engine.commit(embedding_cache=EmbeddingCache(), num_threads=args.threads)
        verb = "upserted" if args.upsert else "added"
        print(summary(f"{verb} {count} document(s)", engine))
    return 0
