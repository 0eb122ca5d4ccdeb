"""``hybrid-engine add INDEX FILE``: stage a JSONL file's documents into a saved live index
and commit them once."""

from __future__ import annotations

import argparse
from typing import Any

from hybrid_engine.cli import _sharded as sharded
from hybrid_engine.cli._corpus import CorpusFile, read_documents
from hybrid_engine.cli._engine import load_engine
from hybrid_engine.cli._live import STDIN, summary, writing
from hybrid_engine.cli._options import add_index_arguments, add_skip_empty_option
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.errors import DuplicateIdError


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
    add_skip_empty_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Read the documents, then load the index, stage them, commit once and print one line.

    The write lock is held from the staging to the end of the commit. On any error nothing
    is committed: the index keeps its last commit.
    """
    corpus = read_documents(args.file, skip_empty=args.skip_empty)  # a bad file fails at once
    if sharded.is_sharded(args.index):
        return run_sharded(args, corpus)
    engine = load_engine(args.index, variant=None, num_threads=args.threads, mmap=False)
    with writing(engine):
        if not args.upsert:
            check_new(engine, corpus)
        stage = engine.upsert if args.upsert else engine.add
        with corpus.lines_named():  # a document the engine refuses, by its line
            ids = stage(corpus.documents)
        engine.commit(embedding_cache=EmbeddingCache(), num_threads=args.threads)
        verb = "upserted" if args.upsert else "added"
        print(summary(f"{verb} {len(ids)} document(s){corpus.skipped_note()}", engine))
    return 0


def run_sharded(args: argparse.Namespace, corpus: CorpusFile) -> int:
    """``add`` on a sharded index: stage the documents on their shards, then one coordinated
    commit; on any error nothing is committed."""
    with sharded.opened(args.index, args.ray_address) as index:
        stage = index.upsert if args.upsert else index.add
        try:
            with corpus.lines_named():
                ids = stage(corpus.documents)
        except DuplicateIdError as exc:  # told in the command line's words
            told = str(exc).replace("use upsert", "pass --upsert")
            raise DuplicateIdError(f"{corpus.source}: {told}") from None
        index.commit()
        verb = "upserted" if args.upsert else "added"
        done = f"{verb} {len(ids)} document(s){corpus.skipped_note()}"
        print(sharded.summary(done, args.index, index))
    return 0


def check_new(engine: HybridIndex, corpus: CorpusFile) -> None:
    """Refuse documents whose ids are in the index already, naming the first one's line and
    ``--upsert`` (``DuplicateIdError``, as the engine's ``add`` would refuse them)."""
    held = engine.holds([doc["_id"] for doc in corpus.documents])
    taken = [position for position, there in enumerate(held) if there]
    if taken:
        first = taken[0]
        doc_id = corpus.documents[first]["_id"]
        others = f" (and {len(taken) - 1} more)" if len(taken) > 1 else ""
        raise DuplicateIdError(
            f"{corpus.source}:{corpus.lines[first]}: document {doc_id!r} is already in the "
            f"index{others}; pass --upsert to replace such documents, or leave them out"
        )
