"""A sharded index on a real two-node Ray cluster: a head node and a second node started as
processes of their own (``ray start --head`` and ``ray start --address`` on loopback), each
with a resource of its own, two shards placed on each. The second node is killed (its raylet
and workers, kill -9) while queries run: answers go on from the first node's shards, naming
the others missing, and a write fails with ``ShardUnavailableError``; when the node returns,
Ray restarts its shards there, and answers are whole again and equal those of one
``HybridIndex`` over the same documents, the write retried included.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

from hybrid_engine import HybridIndex  # noqa: E402
from hybrid_engine.distributed import ShardedIndex, ShardUnavailableError  # noqa: E402

pytestmark = pytest.mark.slow
RAY = str(Path(sys.executable).with_name("ray"))
QUERIES = ["river stone", "snow wind", "sea tide moon", "cat mat"]
WORDS = "river stone snow wind sea tide moon cat mat sand rain sun".split()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _documents(prefix: str, n: int) -> list[dict[str, Any]]:
    return [
        {"_id": f"{prefix}{i}", "text": " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))}
        for i in range(n)
    ]


def _kill(pattern: str) -> int:
    """SIGKILL every process whose command line holds ``pattern``; how many."""
    killed = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if pattern in cmdline and int(pid) != os.getpid():
            with contextlib.suppress(OSError):
                os.kill(int(pid), signal.SIGKILL)
                killed += 1
    return killed


class Cluster:
    """The head node (resource ``node_a``) and the second node (``node_b``), whose raylet and
    workers ``kill_second`` kills and ``start_second`` starts again."""

    def __init__(self) -> None:
        self.temp = tempfile.mkdtemp(prefix="he-nodes-", dir="/tmp")
        self.port = _free_port()
        self.second_port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self._ray(
            "--head", f"--port={self.port}", f"--temp-dir={self.temp}",
            '--resources={"node_a": 8}', "--include-dashboard=false",
        )  # fmt: skip
        self.start_second()

    def _ray(self, *args: str) -> None:
        subprocess.run(
            [RAY, "start", "--num-cpus=1", "--disable-usage-stats", *args],
            check=True, capture_output=True,
        )  # fmt: skip

    def start_second(self) -> None:
        self._ray(
            f"--address={self.address}", '--resources={"node_b": 8}',
            f"--node-manager-port={self.second_port}",
        )  # fmt: skip

    def kill_second(self) -> None:
        """kill -9 the second node: its raylet and the workers it started."""
        assert _kill(f"--node_manager_port={self.second_port} ") == 1
        _kill(f"--node-manager-port={self.second_port} ")

    def stop(self) -> None:
        _kill(self.temp)


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """The two nodes, with Ray's token authentication (the default of ``ray start``) under a
    token of the test's own, and this process connected to them. Ray reads the
    authentication settings once per process: its own test helper makes it read them again
    (``reset_auth_token_state``), here and after."""
    from ray._private.authentication_test_utils import reset_auth_token_state

    os.environ.update(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=os.urandom(32).hex())
    reset_auth_token_state()
    nodes = Cluster()
    try:
        ray.init(address=nodes.address, log_to_driver=False)
        yield nodes
    finally:
        ray.shutdown()
        nodes.stop()
        for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN"):
            os.environ.pop(name, None)
        reset_auth_token_state()


def _node_of(actor: Any) -> str:
    """The id of the node an actor runs on (Ray's actor table)."""
    return str(ray._private.state.actors(actor._actor_id.hex())["Address"]["NodeID"])


def _nodes_by_resource() -> dict[str, str]:
    return {
        name: node["NodeID"]
        for node in ray.nodes()
        if node["Alive"]
        for name in ("node_a", "node_b")
        if name in node["Resources"]
    }


def _ranked(result: Any) -> list[list[tuple[str, float]]]:
    return [[(hit.id, round(hit.score, 4)) for hit in hits] for hits in result.hit_lists]


def _single_ranked(single: HybridIndex) -> list[list[tuple[str, float]]]:
    return [[(h.id, round(h.score, 4)) for h in row] for row in single.search(QUERIES, 10).hits()]


def test_queries_go_on_while_a_node_dies_and_returns(cluster: Cluster, tmp_path: Path) -> None:
    docs = _documents("d", 120)
    placement = [{"resources": {"node_a": 1}}] * 2 + [{"resources": {"node_b": 1}}] * 2
    index = ShardedIndex.build(
        docs, tmp_path / "sharded", n_shards=4, build_options={"retrievers": ["bm25"]},
        actor_options=placement, timeout_s=5.0,
    )  # fmt: skip
    try:
        nodes = _nodes_by_resource()
        on = [_node_of(actors[0]) for actors in index.actors]
        assert on == [nodes["node_a"]] * 2 + [nodes["node_b"]] * 2
        single = HybridIndex.build(docs, retrievers=("bm25",))
        whole = [
            [(h.id, round(h.score, 4)) for h in row] for row in single.search(QUERIES, 10).hits()
        ]
        assert _ranked(index.search(QUERIES, 10)) == whole

        log: list[tuple[float, bool, tuple[int, ...]]] = []
        done = threading.Event()

        def query() -> None:
            while not done.is_set():
                result = index.search(QUERIES, 10)
                log.append((time.monotonic(), result.complete, tuple(result.missing_shards)))
                time.sleep(0.1)

        reader = threading.Thread(target=query)
        reader.start()
        time.sleep(1.0)
        killed = time.monotonic()
        cluster.kill_second()
        time.sleep(8.0)
        with pytest.raises(ShardUnavailableError):
            index.add(_documents("n", 8))  # every shard gets some: two do not answer
        cluster.start_second()
        index.wait_ready(timeout_s=180)
        added = _documents("n", 8)
        index.add(added)
        index.commit()
        time.sleep(1.0)
        done.set()
        reader.join()

        before = [entry for entry in log if entry[0] < killed]
        assert before and all(complete for _, complete, _ in before)
        partial = [missing for _, complete, missing in log if not complete]
        assert partial and all(set(missing) <= {2, 3} for missing in partial)
        assert log[-1][1]  # whole again
        assert [_node_of(actors[0]) for actors in index.actors][2:] == [
            _nodes_by_resource()["node_b"]
        ] * 2
        single.add(added)
        single.commit()
        again = [
            [(h.id, round(h.score, 4)) for h in row] for row in single.search(QUERIES, 10).hits()
        ]
        assert _ranked(index.search(QUERIES, 10)) == again
        print(f"{len(log)} searches: {len(partial)} partial while the node was down")
    finally:
        index.close()
