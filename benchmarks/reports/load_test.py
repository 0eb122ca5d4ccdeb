"""A bounded load test of ``hybrid-engine serve`` on loopback: p50/p95/p99 latency and
requests/s at several client counts, with and without micro-batching, for hybrid search and
hybrid + rerank; and the server's own overhead (HTTP p50 minus the engine's p50 at one client,
without batching).

Each scenario starts ``hybrid-engine serve`` in its own process, sends a few warm-up requests,
then a fixed number of ``POST /search`` requests (one query each, the collection's queries in
turn) from N client threads with keep-alive connections, and stops. The clients run in this
process, beside the server on the same 2 cores: what they cost is part of every figure.

    PYTHONPATH=. python benchmarks/reports/load_test.py /work/runs/scifact-live \\
        ../shared/data/beir/scifact --reranker scifact-ce-64 --out runs/load.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from hybrid_engine.evaluation import load_queries
from hybrid_engine.server.background import STARTUP_TIMEOUT_S


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``hybrid-engine serve`` in a child process, until ``stop``."""

    def __init__(self, index: str, options: list[str]) -> None:
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        command = [sys.executable, "-m", "hybrid_engine", "serve", index, "--port", str(self.port)]
        self.process = subprocess.Popen(
            [*command, *options], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT_S * 4
        while True:
            try:
                if httpx.get(f"{self.url}/health", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"hybrid-engine serve {' '.join(options)} did not start")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def run_load(
    url: str, queries: list[str], clients: int, requests: int, body: dict[str, Any]
) -> dict[str, float]:
    """``requests`` searches from ``clients`` threads; latency percentiles in ms, req/s, the
    engine's p50 (``timings_ms["total"]``) and the mean batch size."""
    latencies = np.zeros(requests)
    engine_ms = np.zeros(requests)
    batches = np.zeros(requests)
    counter = iter(range(requests))
    lock = threading.Lock()

    def client() -> None:
        with httpx.Client(base_url=url, timeout=120.0) as http:
            while True:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                start = time.perf_counter()
                response = http.post("/search", json={**body, "query": queries[i % len(queries)]})
                latencies[i] = (time.perf_counter() - start) * 1000.0
                if response.status_code != 200:
                    raise RuntimeError(f"request {i}: {response.status_code} {response.text}")
                answer = response.json()
                engine_ms[i] = answer["timings_ms"]["total"]
                batches[i] = answer["batch_size"]

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(client) for _ in range(clients)]:
            future.result()
    wall = time.perf_counter() - start
    p50, p95, p99 = np.percentile(latencies, [50, 95, 99])
    return {
        "p50_ms": float(p50),
        "p95_ms": float(p95),
        "p99_ms": float(p99),
        "requests_per_s": requests / wall,
        "engine_p50_ms": float(np.median(engine_ms)),
        "mean_batch": float(batches.mean()),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", help="a live index directory (hybrid-engine index)")
    parser.add_argument("dataset", help="a BEIR folder whose queries.jsonl is sent")
    parser.add_argument("--clients", default="1,4,16", help="client counts (default: %(default)s)")
    parser.add_argument("--requests", type=int, default=400, help="per hybrid scenario")
    parser.add_argument("--rerank-requests", type=int, default=64, help="per rerank scenario")
    parser.add_argument("--reranker", default=None, help="cross-encoder for hybrid + rerank")
    parser.add_argument("--rerank", type=int, default=20, help="fused hits reranked")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--out", default=None, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    queries = list(load_queries(Path(args.dataset) / "queries.jsonl").values())
    modes: list[tuple[str, list[str], dict[str, Any], int]] = [
        ("hybrid", [], {"k": args.k}, args.requests)
    ]
    if args.reranker is not None:
        modes.append(
            (
                "hybrid+rerank",
                ["--reranker", args.reranker],
                {"k": args.k, "rerank": args.rerank},
                args.rerank_requests,
            )
        )
    rows = []
    for mode, options, body, requests in modes:
        for batching, batch_options in (("off", ["--batch-max", "1"]), ("on", [])):
            server = Server(args.index, [*options, *batch_options])
            try:
                run_load(server.url, queries[::-1], 2, 16, body)  # warm-up
                for clients in (int(c) for c in args.clients.split(",")):
                    figures = run_load(server.url, queries, clients, requests, body)
                    row = {"mode": mode, "batching": batching, "clients": clients, **figures}
                    rows.append(row)
                    print(json.dumps(row), flush=True)
            finally:
                server.stop()
    single = next(r for r in rows if r["batching"] == "off" and r["clients"] == 1)
    overhead = {
        "http_p50_ms": single["p50_ms"],
        "engine_p50_ms": single["engine_p50_ms"],
        "overhead_ms": single["p50_ms"] - single["engine_p50_ms"],
    }
    print(json.dumps({"server_overhead": overhead}), flush=True)
    if args.out is not None:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(
            json.dumps(
                {"rows": rows, "server_overhead": overhead, "cpus": os.cpu_count()}, indent=1
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
