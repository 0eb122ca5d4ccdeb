"""Resident memory of cross-encoder scoring from several threads (issue 14, the short repro).

Scores ``--calls`` batches of random SciFact (claim, abstract) pairs, ``--pairs`` / 2 to
``--pairs`` per batch, from ``--threads`` persistent threads: with ``--concurrent`` all at once,
else one batch at a time, each on the next thread (as a soak's reranked calls land). Prints
VmRSS after a warm-up batch (start), after each batch, after the last (end), and the process's
CPU time; the peak is the largest of those samples::

    PYTHONPATH=. python benchmarks/reports/rerank_memory.py MODEL [--threads 8] [--calls 24]
        [--pairs 32] [--concurrent]
"""

from __future__ import annotations

import argparse
import json
import random
import threading
import time

from soak import rss_mib

from hybrid_engine import CrossEncoder
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.evaluation import load_beir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a prepared cross-encoder (folder or name)")
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--calls", type=int, default=24, help="batches in all")
    parser.add_argument("--pairs", type=int, default=32, help="most pairs per batch")
    parser.add_argument("--concurrent", action="store_true")
    args = parser.parse_args()

    dataset = load_beir(DEFAULT_DATASET)
    passages = [f"{d.get('title', '')} {d.get('text', '')}".strip() for d in dataset.corpus]
    queries = list(dataset.queries.values())
    model = CrossEncoder.load(args.model, num_threads=1)
    rng = random.Random(0)
    batches = []
    for _ in range(args.calls + 1):
        n = rng.randint(max(1, args.pairs // 2), args.pairs)
        batches.append(([rng.choice(queries)] * n, [rng.choice(passages) for _ in range(n)]))
    model.score(*batches[0])
    samples = [rss_mib()]
    lock = threading.Condition()
    turn = [1]

    def work(thread: int) -> None:
        for call in range(1 + thread, args.calls + 1, args.threads):
            if not args.concurrent:
                with lock:
                    lock.wait_for(lambda call=call: turn[0] == call)
            model.score(*batches[call])
            with lock:
                samples.append(rss_mib())
                turn[0] += 1
                lock.notify_all()

    cpu = time.process_time()
    threads = [threading.Thread(target=work, args=(t,)) for t in range(args.threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    samples.append(rss_mib())
    report = {
        "threads": args.threads,
        "calls": args.calls,
        "concurrent": args.concurrent,
        "cpu_s": round(time.process_time() - cpu, 1),
        "rss_start_mib": round(samples[0], 1),
        "rss_peak_mib": round(max(samples), 1),
        "rss_end_mib": round(samples[-1], 1),
        "samples": [round(s, 1) for s in samples],
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
