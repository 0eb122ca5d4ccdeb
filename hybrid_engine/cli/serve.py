"""``hybrid-engine serve INDEX``: the HTTP server (``hybrid_engine.server``) over a saved live
index, run by uvicorn. Needs the ``serve`` extra.

The port is bound before the index is loaded, so a bad ``--port`` or one in use is a one-line
error at once; SIGTERM (systemd's, Docker's and Kubernetes' stop) stops the server as SIGINT
(Ctrl+C) does: the requests under way finish, then the staged changes are committed
(``--commit-on-shutdown``) or dropped with a warning, and the exit status is 0."""

from __future__ import annotations

import argparse
import errno
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from hybrid_engine.cli import _sharded as sharded
from hybrid_engine.cli._engine import load_searched, reranker
from hybrid_engine.cli._options import (
    add_loaded_models_options,
    add_loading_options,
    add_ray_option,
    add_threads_option,
)
from hybrid_engine.cli._values import positive_float
from hybrid_engine.distributed.index import ShardedIndex
from hybrid_engine.engine.index import HybridIndex

if TYPE_CHECKING:
    import uvicorn

API_KEY_ENV = "HYBRID_ENGINE_API_KEY"
"""The environment variable of the API key (a key on the command line shows in ``ps``)."""
MAX_PORT = 65535
"""The highest TCP port."""


def add_parser(subparsers: Any) -> None:
    """Add ``serve`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser(
        "serve", help="serve a live index over HTTP (search, documents, commit, metrics)"
    )
    p.add_argument(
        "index", help="live or sharded index directory (`hybrid-engine index [--shards N]`)"
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default: %(default)s, local only)"
    )
    p.add_argument(
        "--port",
        type=int,
        default=8080,
        help=f"port, 0 to {MAX_PORT} (default: %(default)s; 0: any free port, printed at start)",
    )
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
    add_loaded_models_options(p)
    add_threads_option(p)
    p.add_argument(
        "--no-page",
        action="store_true",
        help="do not serve the search page at / (the API only)",
    )
    add_loading_options(p)
    add_ray_option(p)
    p.add_argument(
        "--shard-timeout",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="with a sharded index: how long a search waits for a shard before answering "
        "without it (named in missing_shards; default: until it answers)",
    )
    p.set_defaults(func=run)


NOT_SHARDED = (
    ("variant", "--variant"),
    ("threads", "--threads"),
    ("mmap", "--mmap"),
    ("allow_degraded", "--allow-degraded"),
)
"""The options ``serve`` has for one index and not for a sharded one (its shards load as it
was built), by ``args`` attribute."""


@contextmanager
def served(args: argparse.Namespace) -> Iterator[HybridIndex | ShardedIndex]:
    """The index ``serve`` serves, loaded (one index: its write lock taken) or opened on its
    shards' actors (a sharded index: a local Ray, or ``--ray-address``'s), with the reranker
    of ``--reranker``; closed after the ``with`` block.

    Raises
    ------
    ValueError
        An option a sharded index does not take (``NOT_SHARDED``), named.
    """
    cross_encoder = reranker(args) if args.reranker is not None else None
    if sharded.is_sharded(args.index):
        why = "not available with a sharded index (its shards load as it was built); leave them out"
        sharded.refuse_options(args, NOT_SHARDED, why)
        with sharded.opened(
            args.index, args.ray_address, cross_encoder, args.shard_timeout
        ) as index:
            yield index
        return
    why = "only with a sharded index (`hybrid-engine index --shards N`); leave it out"
    sharded.refuse_options(args, (("shard_timeout", "--shard-timeout"),), why)
    engine = load_searched(args)
    with engine:
        yield engine if cross_encoder is None else engine.with_reranker(cross_encoder)


def run(args: argparse.Namespace) -> int:
    """Bind the port, load the index (it takes the write lock; a sharded one is opened on
    its shards' actors: ``served``) and serve it until SIGINT or SIGTERM; then commit or drop
    the staged changes (``settle_staged``).

    The API key, when wanted, is read from ``$HYBRID_ENGINE_API_KEY``.

    Raises
    ------
    ValueError
        The ``serve`` extra (fastapi, uvicorn) is not installed, ``--batch-max`` is below 1,
        ``--port`` is not a port, the address cannot be bound (``bound_socket``), or an
        option a sharded index does not take (``served``).
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
    if not 0 <= args.port <= MAX_PORT:
        raise ValueError(f"--port must be from 0 to {MAX_PORT} (0: any free port), got {args.port}")
    batching = None
    if args.batch_max > 1:
        batching = BatchPolicy(max_batch=args.batch_max)
    with bound_socket(args.host, args.port) as sock, served(args) as engine:
        app = create_app(
            engine,
            api_key=os.environ.get(API_KEY_ENV) or None,
            cors_origins=args.cors_origin,
            batching=batching,
            page=not args.no_page,
        )
        host, port = sock.getsockname()[:2]
        host = f"[{host}]" if ":" in host else host  # IPv6, as URLs write it
        print(
            f"hybrid-engine serve: serving {args.index} on http://{host}:{port} "
            "(stop with Ctrl+C or SIGTERM)",
            file=sys.stderr,
            flush=True,
        )
        serve_until_stopped(uvicorn.Server(uvicorn.Config(app)), sock)
        settle_staged(engine, commit=args.commit_on_shutdown)
    return 0


def bound_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` and not listening yet (uvicorn listens when the
    app is ready; until then connections are refused, not queued).

    Raises
    ------
    ValueError
        ``host`` is no address of this machine, ``port`` is in use or needs privileges (the
        message names ``host:port`` and the fix).
    """
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise ValueError(
            f"--host {host!r} is not a known address ({exc.strerror}); give an IP address of "
            "this machine, e.g. 127.0.0.1"
        ) from None
    sock = socket.socket(family, kind, proto)
    try:
        # As uvicorn does: a restarted server may bind a port whose old connections linger.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise ValueError(bind_problem(host, port, exc)) from None
    return sock


def bind_problem(host: str, port: int, exc: OSError) -> str:
    """Why ``host:port`` could not be bound, and the fix, in ``serve``'s options."""
    where = f"{host}:{port}"
    if exc.errno == errno.EADDRINUSE:
        return (
            f"{where} is already in use (another server, or a serve still running): stop it, "
            "or give another --port"
        )
    if exc.errno == errno.EACCES:
        return f"may not listen on {where} ({exc.strerror}): give a --port from 1024 up"
    if exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"cannot listen on {where}: --host {host} is not an address of this machine; "
            "give one of its addresses, e.g. 127.0.0.1"
        )
    return f"cannot listen on {where}: {exc.strerror or exc}"


def serve_until_stopped(server: uvicorn.Server, sock: socket.socket) -> None:
    """Run ``server`` on ``sock`` until SIGINT or SIGTERM.

    uvicorn stops gracefully on either signal and then raises it again, so that the signal's
    previous handler runs. SIGTERM's default handler would end the process there (status
    143) before the staged changes are settled; so while serving, SIGTERM's handler is
    SIGINT's (``KeyboardInterrupt``), and both signals return here.
    """
    if threading.current_thread() is not threading.main_thread():
        server.run(sockets=[sock])  # only the main thread has signals (uvicorn's rule too)
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


def settle_staged(engine: HybridIndex | ShardedIndex, *, commit: bool) -> None:
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
