"""The Ray side of a sharded index: shard actors, and calls to all of them that tell a shard
that did not answer from one that raised."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from hybrid_engine.checks import check_int
from hybrid_engine.distributed.manifest import shard_dir
from hybrid_engine.distributed.worker import ShardWorker
from hybrid_engine.errors import ShardUnavailableError as ShardUnavailableError

MAX_RESTARTS = -1
"""Ray restarts a dead shard actor without limit (it reloads its last commit)."""


def ray_module() -> ModuleType:
    """The ``ray`` package, or an ImportError naming the extra that installs it."""
    try:
        return importlib.import_module("ray")
    except ImportError as exc:
        raise ImportError(
            "hybrid_engine.distributed needs Ray: pip install 'hybrid-engine[ray]'"
        ) from exc


def start_shard(
    path: str,
    load_options: Mapping[str, Any],
    build_options: Mapping[str, Any],
    actor_options: Mapping[str, Any],
    *,
    replica: bool = False,
) -> Any:
    """A Ray actor holding the ``ShardWorker`` of the shard directory ``path``.

    ``actor_options`` go to ``ray.remote(...).options`` (``num_cpus``, ``resources``,
    ``scheduling_strategy`` to place it); by default an actor reserves no CPU, so any number
    of shards fit a small machine, and Ray restarts it whenever it dies (``MAX_RESTARTS``),
    running its constructor again: it loads the shard's last commit. A ``replica`` serves
    searches only (``ShardWorker``).
    """
    ray = ray_module()
    options = {"num_cpus": 0, "max_restarts": MAX_RESTARTS, "max_task_retries": 0}
    options.update(actor_options)
    return (
        ray.remote(ShardWorker)
        .options(**options)
        .remote(path, dict(load_options), dict(build_options), replica)
    )


def start_shards(
    root: Path,
    n_shards: int,
    replicas: int,
    load_options: Mapping[str, Any] | None,
    build_options: Mapping[str, Any],
    actor_options: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None,
) -> list[list[Any]]:
    """Each shard's actors: its writer, then ``replicas - 1`` read replicas."""
    replicas = check_int("replicas", replicas, 1)
    if actor_options is None or isinstance(actor_options, Mapping):
        per_shard: Sequence[Mapping[str, Any]] = [actor_options or {}] * n_shards
    else:
        per_shard = list(actor_options)
        if len(per_shard) != n_shards:
            raise ValueError(
                f"actor_options has {len(per_shard)} entries for {n_shards} shards: give one "
                "dict for all, or one per shard"
            )
    return [
        [
            start_shard(
                str(shard_dir(root, s)),
                load_options or {},
                build_options,
                per_shard[s],
                replica=rank > 0,
            )
            for rank in range(replicas)
        ]
        for s in range(n_shards)
    ]


def stop_shards(replicas: list[list[Any]]) -> None:
    """Kill every actor, for good."""
    ray = ray_module()
    for actors in replicas:
        for actor in actors:
            ray.kill(actor, no_restart=True)


class ShardCalls:
    """Calls of one method on several shard actors, gathered. Reads (``bounded``) wait at
    most ``timeout_s`` for a shard; writes wait for every shard, however long it takes."""

    def __init__(self, actors: Sequence[Any], timeout_s: float | None) -> None:
        self._actors = actors
        self._timeout_s = timeout_s

    def all(self, method: str, *args: Any) -> list[Any]:
        """``method(*args)`` on every shard; the first error raised (a shard's own exception
        as it was raised there), once all have ended."""
        return self.each(method, [args] * len(self._actors))

    def each(self, method: str, args: Sequence[tuple[Any, ...] | None]) -> list[Any]:
        """``method(*args[i])`` on shard ``i`` (not called where ``args[i]`` is None, whose
        answer is None); raises as ``all``."""
        answers, failures = self.gather(method, args)
        for shard in sorted(failures):
            raise failures[shard]
        return answers

    def gather(
        self, method: str, args: Sequence[tuple[Any, ...] | None], *, bounded: bool = False
    ) -> tuple[list[Any], dict[int, BaseException]]:
        """The answers of ``method`` on the shards (None where it was not called or
        failed), and each failure by shard: the shard's own exception, or Ray's error when
        the actor died or is restarting, or a TimeoutError when ``bounded`` and it did not
        answer within ``timeout_s``."""
        ray = ray_module()
        refs = {
            shard: getattr(actor, method).remote(*call)
            for shard, (actor, call) in enumerate(zip(self._actors, args, strict=True))
            if call is not None
        }
        answers: list[Any] = [None] * len(self._actors)
        failures: dict[int, BaseException] = {}
        timeout = self._timeout_s if bounded else None
        ready, pending = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout)
        for ref in pending:
            ray.cancel(ref, force=False)
        done = set(ready)
        for shard, ref in refs.items():
            if ref not in done:
                failures[shard] = TimeoutError(
                    f"shard {shard} did not answer {method} within {self._timeout_s} s"
                )
                continue
            try:
                answers[shard] = ray.get(ref)
            except ray.exceptions.RayTaskError as exc:
                failures[shard] = exc.cause if isinstance(exc.cause, BaseException) else exc
            except ray.exceptions.RayActorError as exc:
                failures[shard] = exc
        return answers, failures


def is_unavailable(error: BaseException) -> bool:
    """Whether ``error`` says the shard did not answer (its actor died, is restarting or
    timed out), rather than that it raised."""
    ray = ray_module()
    return isinstance(error, (ray.exceptions.RayActorError, TimeoutError))
