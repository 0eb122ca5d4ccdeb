"""The command line's door to a sharded index (``distributed.ShardedIndex``, docs/scaling.md):
``index --shards N`` builds one, ``add`` and ``delete`` change one, ``search`` queries one.
Each command runs its shards on a Ray cluster: a local one started for the command and
stopped after, or a running one joined with ``--ray-address``."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hybrid_engine.cli._engine import LegOptions
from hybrid_engine.corpus import Document
from hybrid_engine.distributed.cluster import ray_module
from hybrid_engine.distributed.index import ShardedIndex
from hybrid_engine.distributed.manifest import MANIFEST
from hybrid_engine.models.cross_encoder import CrossEncoder


def is_sharded(path: str | Path) -> bool:
    """Whether ``path`` holds a sharded index (its ``sharded.json``)."""
    return (Path(path) / MANIFEST).is_file()


def refuse_options(args: argparse.Namespace, options: Sequence[tuple[str, str]], why: str) -> None:
    """Raise a ValueError naming the flags of ``options`` (``args`` attribute, flag) that were
    given: ``"<flags>: <why>"``."""
    given = [flag for name, flag in options if getattr(args, name) not in (None, False)]
    if given:
        raise ValueError(f"{', '.join(given)}: {why}")


@contextmanager
def ray_session(address: str | None) -> Iterator[None]:
    """Ray for the ``with`` block: joined at ``address``, or started on this machine (and
    stopped after); a session this process already holds is used as it is."""
    ray = ray_module()
    if ray.is_initialized():
        yield
        return
    ray.init(address=address, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    try:
        yield
    finally:
        ray.shutdown()


def build_options(
    retrievers: Sequence[str], leg_options: LegOptions, model: str | None, variant: str
) -> dict[str, Any]:
    """``ShardedIndex.build``'s ``build_options`` of the ``index`` command's choices: the
    legs, their options, and for a dense leg the bi-encoder each shard loads and the
    embedding cache (``$HYBRID_ENGINE_CACHE``), as ``index`` uses it for one index."""
    options: dict[str, Any] = {"retrievers": list(retrievers)}
    for leg, key in (("bm25", "bm25_options"), ("dense", "dense_options")):
        if leg_options.get(leg):
            options[key] = dict(leg_options[leg])
    if "dense" in retrievers:
        options["encoder"] = {"model": model, "variant": variant}
        options["embedding_cache"] = True  # as `index` builds one index: embedded once
    return options


def build(
    corpus: Iterable[Document],
    output: Path,
    *,
    n_shards: int,
    options: dict[str, Any],
    address: str | None,
) -> int:
    """Build the sharded index at ``output`` (new or an empty directory); returns its
    documents."""
    if output.is_dir() and not any(output.iterdir()):
        output.rmdir()  # ShardedIndex.build writes into a directory that does not exist yet
    with (
        ray_session(address),
        ShardedIndex.build(
            corpus, output.resolve(), n_shards=n_shards, build_options=options
        ) as sharded,
    ):
        return len(sharded)


@contextmanager
def opened(
    path: str | Path,
    address: str | None,
    reranker: CrossEncoder | None = None,
    timeout_s: float | None = None,
) -> Iterator[ShardedIndex]:
    """The sharded index at ``path`` on its shards' actors for the ``with`` block (with the
    ``reranker`` on this process; searches wait ``timeout_s`` for a shard, None: until it
    answers), then closed (its write locks given back)."""
    with (
        ray_session(address),
        ShardedIndex.open(Path(path).resolve(), reranker=reranker, timeout_s=timeout_s) as sharded,
    ):
        yield sharded


def summary(done: str, path: str | Path, sharded: ShardedIndex) -> str:
    """``"<done> -> INDEX: N documents in S shard(s)"``, after the commit."""
    return f"{done} -> {path}: {len(sharded)} documents in {sharded.n_shards} shard(s)"
