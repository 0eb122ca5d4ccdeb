"""``hybrid-engine serve INDEX``: the HTTP server (``hybrid_engine.server``) over a saved live
index, run by uvicorn. Needs the ``serve`` extra."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from hybrid_engine.cli._engine import (
    add_degraded_option,
    add_reranker_options,
    add_variant_option,
    load_engine,
    reranker,
)
from hybrid_engine.pipeline.engine import HybridIndex

API_KEY_ENV = "HYBRID_ENGINE_API_KEY"
"""The environment variable of the API key (a key on the command line shows in ``ps``)."""


def add_parser(subparsers: Any) -> None:
    """Add ``serve`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser(
        "serve", help="serve a live index over HTTP (search, documents, commit, metrics)"
    )
    p.add_argument("index", help="live index directory (`hybrid-engine index` or save)")
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: %(default)s, local only)"
    )
    p.add_argument("--port", type=int, default=8080, help="port (default: %(default)s)")
    p.add_argument(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="allow cross-origin requests from ORIGIN (repeatable; default: none)",
    )
    p.add_argument(
        "--batch-max",
        type=int,
        default=32,
        metavar="N",
        help="queries per batched engine call (default: %(default)s; 1: no batching)",
    )
    p.add_argument(
        "--commit-on-shutdown",
        action="store_true",
        help="commit staged changes when the server stops (default: drop them, with a warning)",
    )
    add_reranker_options(p)
    add_variant_option(
        p, "bi-encoder variant to load (default: the one the index recorded)", default=None
    )
    p.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    add_degraded_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load the index (it takes the write lock) and serve it until interrupted.

    The API key, when wanted, is read from ``$HYBRID_ENGINE_API_KEY``.

    Raises
    ------
    ValueError
        The ``serve`` extra (fastapi, uvicorn) is not installed, or ``--batch-max`` is below 1.
    """
    try:
        import uvicorn

        from hybrid_engine.server import create_app
    except ImportError as exc:
        raise ValueError(
            f"serve needs the serve extra ({exc}): pip install 'hybrid-engine[serve]'"
        ) from None
    from hybrid_engine.server.batching import BatchPolicy

    if args.batch_max < 1:
        raise ValueError(
            f"--batch-max must be >= 1, got {args.batch_max}; give 1 to serve without batching"
        )
    batching = None
    if args.batch_max > 1:
        batching = BatchPolicy(max_batch=args.batch_max)
    cross_encoder = reranker(args) if args.reranker is not None else None
    engine = load_engine(
        args.index,
        variant=args.variant,
        num_threads=args.threads,
        mmap=False,
        allow_degraded=args.allow_degraded,
    )
    with engine:
        if cross_encoder is not None:
            engine = engine.with_reranker(cross_encoder)
        app = create_app(
            engine,
            api_key=os.environ.get(API_KEY_ENV) or None,
            cors_origins=args.cors_origin,
            batching=batching,
        )
        uvicorn.run(app, host=args.host, port=args.port)
        settle_staged(engine, commit=args.commit_on_shutdown)
    return 0


def settle_staged(engine: HybridIndex, *, commit: bool) -> None:
    """At shutdown: commit the changes staged and not committed, or say they are dropped."""
    if not engine.has_staged:
        return
    if commit:
        engine.commit()
        print("hybrid-engine serve: committed the staged changes at shutdown", file=sys.stderr)
    else:
        print(
            "hybrid-engine serve: warning: staged changes were not committed and are dropped "
            "(POST /commit before stopping, or serve with --commit-on-shutdown)",
            file=sys.stderr,
        )
