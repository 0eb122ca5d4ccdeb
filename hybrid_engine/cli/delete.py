"""``hybrid-engine delete INDEX ID...``: delete documents of a saved live index by id and
commit once."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any

from hybrid_engine.cli import _sharded as sharded
from hybrid_engine.cli._engine import load_engine
from hybrid_engine.cli._live import STDIN, summary, writing
from hybrid_engine.cli._options import add_index_arguments
from hybrid_engine.errors import UnknownIdError
from hybrid_engine.ids import check_id


def add_parser(subparsers: Any) -> None:
    """Add ``delete`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser("delete", help="delete documents of a saved index by id and commit")
    add_index_arguments(p)
    p.add_argument("ids", nargs="*", metavar="ID", help="document ids")
    p.add_argument(
        "--ids-file",
        default=None,
        metavar="FILE",
        help=f"more ids, one per line (blank lines skipped, ends trimmed; {STDIN}: stdin)",
    )
    p.add_argument(
        "--missing-ok",
        action="store_true",
        help="skip ids that are not in the index (default: any is an error, nothing deleted)",
    )
    p.set_defaults(func=run)


def read_ids(args: argparse.Namespace) -> list[str]:
    """The ids on the command line then those of ``--ids-file``, each once, in order; each
    by the id rule (``ids.check_id``; a line's ends are trimmed and blank lines skipped).

    Raises
    ------
    ValueError
        No id at all, or one that breaks the rule (naming the argument or the file's line).
    OSError
        ``--ids-file`` cannot be read.
    """
    ids = [check_id(doc_id, f"ID {i}") for i, doc_id in enumerate(args.ids, 1)]
    if args.ids_file == STDIN:
        ids.extend(file_ids(sys.stdin, "<stdin>"))
    elif args.ids_file is not None:
        with open(args.ids_file, encoding="utf-8") as lines:
            ids.extend(file_ids(lines, args.ids_file))
    ids = list(dict.fromkeys(ids))
    if not ids:
        raise ValueError("no ids to delete: give them as arguments or in --ids-file")
    return ids


def file_ids(lines: Iterable[str], source: str) -> list[str]:
    """The ids of an ids file, one per line: ends trimmed, blank lines skipped, each by the
    id rule (a ``ValueError`` naming ``source`` and the line)."""
    return [
        check_id(line.strip(), f"{source}:{number}: the id")
        for number, line in enumerate(lines, 1)
        if line.strip()
    ]


def run(args: argparse.Namespace) -> int:
    """Load the index, stage the deletions, commit once and print one line.

    The write lock is held from the staging to the end of the commit. An unknown id without
    ``--missing-ok`` is an error, and nothing is committed on any error.
    """
    ids = read_ids(args)
    if sharded.is_sharded(args.index):
        return run_sharded(args, ids)
    engine = load_engine(args.index, variant=None, num_threads=args.threads, mmap=False)
    with writing(engine):
        if not args.missing_ok:
            unknown = [
                doc_id for doc_id, held in zip(ids, engine.holds(ids), strict=True) if not held
            ]
            if unknown:
                raise UnknownIdError(
                    f"{len(unknown)} id(s) are not in the index, e.g. {unknown[:5]}; nothing "
                    "was deleted (pass --missing-ok to delete the others)"
                )
        count = engine.delete(ids, missing_ok=args.missing_ok)
        engine.commit(num_threads=args.threads)
        skipped = f" ({len(ids) - count} not in the index, skipped)" if count < len(ids) else ""
        print(summary(f"deleted {count} document(s){skipped}", engine))
    return 0


def run_sharded(args: argparse.Namespace, ids: list[str]) -> int:
    """``delete`` on a sharded index: stage the deletions on their shards, then one
    coordinated commit; an unknown id without ``--missing-ok`` deletes nothing."""
    with sharded.opened(args.index, args.ray_address) as index:
        try:
            count = index.delete(ids, missing_ok=args.missing_ok)
        except UnknownIdError as exc:  # told in the command line's words
            raise UnknownIdError(str(exc).replace("missing_ok=True", "--missing-ok")) from None
        index.commit()
        skipped = f" ({len(ids) - count} not in the index, skipped)" if count < len(ids) else ""
        print(sharded.summary(f"deleted {count} document(s){skipped}", args.index, index))
    return 0
