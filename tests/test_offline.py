"""No network at run time: build, save, load, search (hybrid, with the prepared dense model)
and one request to the server all succeed in a process where every connection to a
non-loopback address, and every name lookup of a non-loopback host, raises.

``HF_HUB_OFFLINE`` and ``TRANSFORMERS_OFFLINE`` are unset there, so a stray Hugging Face Hub
call would try the network (and be caught); any attempt is also recorded, so one that a
library swallows fails the test too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BLOCK = """
import ipaddress
import socket

ATTEMPTS = []


def _loopback(host):
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _check(address):
    if isinstance(address, (str, bytes)):  # a Unix socket path: local
        return
    if not _loopback(address[0]):
        ATTEMPTS.append(repr(address))
        raise OSError(f"network blocked by the test: {address!r}")


_connect, _connect_ex = socket.socket.connect, socket.socket.connect_ex
_create_connection, _getaddrinfo = socket.create_connection, socket.getaddrinfo


def connect(self, address):
    _check(address)
    return _connect(self, address)


def connect_ex(self, address):
    _check(address)
    return _connect_ex(self, address)


def create_connection(address, *args, **kwargs):
    _check(address)
    return _create_connection(address, *args, **kwargs)


def getaddrinfo(host, *args, **kwargs):
    if host is not None and not _loopback(host if isinstance(host, str) else host.decode()):
        ATTEMPTS.append(f"getaddrinfo({host!r})")
        raise socket.gaierror(f"name lookup blocked by the test: {host!r}")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect, socket.socket.connect_ex = connect, connect_ex
socket.create_connection, socket.getaddrinfo = create_connection, getaddrinfo
"""

RUN = """
import json
import sys
import urllib.request
from pathlib import Path

from hybrid_engine import HybridIndex
from hybrid_engine.server import create_app
from hybrid_engine.server.background import serve_in_thread

try:  # the block works: a connection elsewhere fails
    socket.create_connection(("192.0.2.1", 80), timeout=1)
    raise SystemExit("the network block did not apply")
except OSError:
    ATTEMPTS.clear()

folder = Path(sys.argv[1])
docs = [
    {"_id": "a", "title": "Rivers", "text": "The river carries sand and stone to the sea."},
    {"_id": "b", "title": "Cats", "text": "A cat sleeps on the mat by the door."},
    {"_id": "c", "title": "Weather", "text": "Rain and wind come before the snow."},
]
with HybridIndex.build(docs, retrievers=("bm25", "dense"), num_threads=1) as engine:
    engine.save(folder)
with HybridIndex.load(folder, num_threads=1) as engine:
    found = engine.search(["sand in the river"], 3).doc_ids
    with serve_in_thread(create_app(engine)) as url:
        request = urllib.request.Request(
            f"{url}/search",
            data=json.dumps({"query": "a sleeping cat", "k": 2}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            served = json.loads(response.read())
print(json.dumps({"found": found, "served": served, "attempts": ATTEMPTS}))
"""


def test_build_save_load_search_and_serve_without_network(model_path: Path, tmp_path: Path) -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    }
    env["HYBRID_ENGINE_MODELS"] = str(model_path.parent)
    env["PYTHONPATH"] = str(ROOT)
    script = textwrap.dedent(BLOCK) + textwrap.dedent(RUN)
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "index")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["attempts"] == []
    assert report["found"][0][0] == "a"
    assert report["served"]["results"][0]["hits"][0]["id"] == "b", report["served"]
