"""The sharded index's measured costs on SciFact's whole corpus (issue 15), for docs/scaling.md.

For one ``HybridIndex`` (the reference) and ``ShardedIndex`` with 1, 2 and 4 shards on a local
Ray cluster this process starts, over the same 5,183 documents (their vectors read from the
embedding cache, so no document is encoded: the first run encodes the corpus once, minutes):

* ``build``: wall seconds of the build (indexing only; for the sharded ones also starting the
  actors and loading the bi-encoder in each), one segment per shard;
* ``queries``: queries/s of ``--queries`` claims, one per call, from 1 and from 4 client
  threads; per-query latency p50/p95 (1 thread), the mean of each stage's ``timings``, and
  the fan-out overhead (sharded p50/p95 minus the single index's);
* ``traffic``: the bytes a search moves per query (each shard's request arguments and its
  answer, ``pickle.dumps(protocol=5)`` as Ray serialises them, summed over the search's
  calls: the legs, then the hits' documents), and those of one commit's statistics exchange
  (each shard's ``BM25Counts`` and the ``prepare`` arguments it is sent back);
* ``memory``: each shard directory's bytes on disk by component (BM25 postings, BM25
  vocabulary, dense vectors, HNSW graph, SPLADE, texts, ids/metadata/manifests) and each
  shard actor's resident memory (and that of an actor holding no shard);
* ``kill``: a query loop over a 4-shard index (``timeout_s=2``, then 0.25) while shard 1's
  actor is killed (Ray restarts it): how many answers were partial or slow, the slowest, when
  answers were whole and fast again, and how many were wrong (a complete answer not equal to
  the expected one, a partial one holding a document of the killed shard); the resident
  memory of the restarted actor (its shard loaded from disk) against the others (built there);
* ``int8_batches``: the largest coordinate difference of the same documents' vectors encoded
  in two batch groupings (all together, and grouped by their shard of 4), int8 and fp32.

Every dense leg builds its HNSW graph (``exact_threshold=0``), as shards of a large collection
would. Prints one JSON object per line; ``--json FILE`` writes them all as a list::

    PYTHONPATH=. python benchmarks/reports/scaling_report.py [--queries 300] \\
        [--json runs/scaling.json]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import ray

from hybrid_engine import EmbeddingCache, Encoder, HybridIndex
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.distributed import ShardedIndex
from hybrid_engine.distributed.cluster import ShardCalls, start_shard
from hybrid_engine.distributed.manifest import shard_dir
from hybrid_engine.distributed.partition import shard_of
from hybrid_engine.evaluation import load_beir

SHARDS = (1, 2, 4)
DENSE = {"exact_threshold": 0}
KILLED = 1
LOOP_S, AFTER_S = 3.0, 15.0
SLOW = 10


def pickled(value: Any) -> int:
    return len(pickle.dumps(value, protocol=5))


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


# -- query load -----------------------------------------------------------------------------------


def query_load(search: Callable[[str], Any], queries: list[str]) -> dict[str, Any]:
    """Queries/s from 1 and 4 client threads, one query per call; latency and stage means of
    the 1-thread pass."""
    for q in queries[:20]:
        search(q)
    latencies, stages = [], defaultdict(list)
    start = time.perf_counter()
    for q in queries:
        t = time.perf_counter()
        result = search(q)
        latencies.append((time.perf_counter() - t) * 1000)
        for stage, ms in result.timings.items():
            stages[stage].append(ms)
    one = len(queries) / (time.perf_counter() - start)
    with ThreadPoolExecutor(4) as pool:
        start = time.perf_counter()
        list(pool.map(search, queries))
        four = len(queries) / (time.perf_counter() - start)
    return {
        "qps_1_thread": round(one, 1),
        "qps_4_threads": round(four, 1),
        "p50_ms": round(percentile(latencies, 50), 2),
        "p95_ms": round(percentile(latencies, 95), 2),
        "stage_mean_ms": {s: round(statistics.fmean(v), 2) for s, v in sorted(stages.items())},
    }


# -- traffic --------------------------------------------------------------------------------------


class Recorder:
    """Wraps ``ShardCalls.gather`` (of every instance: the writers' and each search's own) to
    add up the pickled bytes of each method's requests and answers, until ``close``."""

    def __init__(self) -> None:
        self.bytes: dict[str, dict[str, int]] = defaultdict(lambda: {"sent": 0, "received": 0})
        self._original = original = ShardCalls.gather

        def gather(
            calls: ShardCalls, method: str, args: Sequence[Any], *, bounded: bool = False
        ) -> Any:
            answers, failures = original(calls, method, args, bounded=bounded)
            for call, answer in zip(args, answers, strict=True):
                if call is not None:
                    self.bytes[method]["sent"] += pickled((method, call))
                    self.bytes[method]["received"] += pickled(answer)
            return answers, failures

        ShardCalls.gather = gather  # type: ignore[method-assign]

    def take(self) -> dict[str, dict[str, int]]:
        out = {m: dict(v) for m, v in self.bytes.items()}
        self.bytes.clear()
        return out

    def close(self) -> None:
        ShardCalls.gather = self._original  # type: ignore[method-assign]


def traffic(index: ShardedIndex, queries: list[str]) -> dict[str, Any]:
    recorder = Recorder()
    try:
        for q in queries:
            index.search([q], 10, num_threads=1)
        searched = recorder.take()
        start = time.perf_counter()
        index.commit()  # nothing staged: the statistics exchange alone, with its commit calls
        commit_ms = (time.perf_counter() - start) * 1000
        committed = recorder.take()
    finally:
        recorder.close()
    per_query = {m: {k: round(v / len(queries)) for k, v in d.items()} for m, d in searched.items()}
    exchange = {m: committed[m] for m in ("bm25_counts", "prepare") if m in committed}
    return {
        "per_query_bytes": per_query,
        "per_query_total_bytes": sum(v for d in per_query.values() for v in d.values()),
        "commit_statistics_bytes": exchange,
        "commit_statistics_total_bytes": sum(v for d in exchange.values() for v in d.values()),
        "commit_other_bytes": {m: d for m, d in committed.items() if m not in exchange},
        "empty_commit_ms": round(commit_ms, 1),
    }


# -- memory ---------------------------------------------------------------------------------------


def component(path: Path) -> str:
    parts, name = path.parts, path.name
    if "bm25" in parts:
        return "bm25_vocabulary" if name.startswith("vocab") else "bm25_postings"
    if "dense" in parts:
        return "hnsw_graph" if name.endswith(".hnsw") else "dense_vectors_and_manifest"
    if "splade" in parts:
        return "splade"
    if name.startswith(("text_", "title_")):
        return "texts"
    return "ids_metadata_manifests"


def disk(directory: Path) -> dict[str, int]:
    sizes: dict[str, int] = defaultdict(int)
    for path in directory.rglob("*"):
        if path.is_file():
            sizes[component(path.relative_to(directory))] += path.stat().st_size
    return dict(sorted(sizes.items()))


def memory(index: ShardedIndex, root: Path) -> dict[str, Any]:
    sizes = index._calls.all("size", index.generation)
    terms = [len(counts.terms) for counts in index._calls.all("bm25_counts")]
    rss = ray.get([actors[0].rss_mib.remote() for actors in index.actors])
    return {
        "shards": [
            {
                "documents": n,
                "terms": t,
                "disk_bytes": disk(shard_dir(root, s)),
                "rss_mib": round(r, 1),
            }
            for s, (n, t, r) in enumerate(zip(sizes, terms, rss, strict=True))
        ]
    }


def shard_rate(index: ShardedIndex, queries: list[str]) -> dict[str, Any]:
    """One shard actor's own answer rate: its ``search`` called directly, one query per call
    from one client (the query vector encoded beforehand), and the round trip of a call that
    does nothing (``commit_number``): Ray's share."""
    encoder = index._shards.encoder
    assert encoder is not None
    vectors = [encoder.encode([q]) for q in queries]
    actor, generation = index.actors[0][0], index.generation  # shard 0's writer
    calls = [
        (generation, [q], 100, None, v, None, 1) for q, v in zip(queries, vectors, strict=True)
    ]
    for call in calls[:20]:
        ray.get(actor.search.remote(*call))
    latencies = []
    start = time.perf_counter()
    for call in calls:
        t = time.perf_counter()
        ray.get(actor.search.remote(*call))
        latencies.append((time.perf_counter() - t) * 1000)
    rate = len(calls) / (time.perf_counter() - start)
    trips = []
    for _ in range(200):
        t = time.perf_counter()
        ray.get(actor.commit_number.remote())
        trips.append((time.perf_counter() - t) * 1000)
    return {
        "shard0_search_qps": round(rate, 1),
        "shard0_search_p50_ms": round(percentile(latencies, 50), 2),
        "empty_call_p50_ms": round(percentile(trips, 50), 2),
    }


def bare_rss(root: Path) -> float:
    """The resident memory of a shard actor that holds no shard (no index, no model)."""
    actor = start_shard(str(root / "no-shard"), {}, {}, {})
    try:
        return float(ray.get(actor.rss_mib.remote()))
    finally:
        ray.kill(actor, no_restart=True)


# -- a killed shard -------------------------------------------------------------------------------


def kill(corpus: list[dict], queries: list[str], root: Path, timeout_s: float) -> dict[str, Any]:
    """A query loop, one query per call, over a 4-shard index answering within ``timeout_s``,
    while shard ``KILLED``'s actor is killed: ``LOOP_S`` seconds before and ``AFTER_S`` after.
    An answer is disrupted when partial or slower than ``SLOW`` times the median before the
    kill; ``recovered_s`` is when the last disrupted answer ended."""
    index = ShardedIndex.build(
        corpus,
        root / f"kill-{timeout_s}",
        n_shards=4,
        build_options={"embedding_cache": True, "dense_options": DENSE},
        batch_size=len(corpus),
        timeout_s=timeout_s,
    )
    try:
        expected = {q: index.search([q], 10, num_threads=1).doc_ids[0] for q in queries}
        answers: list[tuple[float, float, str, Any]] = []
        stop = threading.Event()

        def loop() -> None:
            while not stop.is_set():
                for q in queries:
                    start = time.monotonic()
                    result = index.search([q], 10, num_threads=1)
                    answers.append((start, time.monotonic(), q, result))

        thread = threading.Thread(target=loop)
        thread.start()
        time.sleep(LOOP_S)
        killed = time.monotonic()
        ray.kill(index.actors[KILLED][0], no_restart=False)
        time.sleep(AFTER_S)
        stop.set()
        thread.join()
        rss = ray.get([actors[0].rss_mib.remote() for actors in index.actors])
        before = [(end - start) * 1000 for start, end, _, _ in answers if end < killed]
        typical = percentile(before, 50)
        after = [a for a in answers if a[1] > killed]
        disrupted = [
            a for a in after if a[3].missing_shards or (a[1] - a[0]) * 1000 > SLOW * typical
        ]
        partial = [a for a in after if a[3].missing_shards]
        wrong = 0
        for _, _, q, r in answers:
            if r.complete:
                wrong += r.doc_ids[0] != expected[q]
            else:
                row = r.doc_ids[0]
                wrong += (
                    r.missing_shards != [KILLED]
                    or any(shard_of(d, 4) == KILLED for d in row)
                    or len(set(row)) != len(row)
                )
        return {
            "timeout_s": timeout_s,
            "answers": len(answers),
            "answers_after_kill": len(after),
            "partial_answers": len(partial),
            "slow_answers": len(disrupted) - len(partial),
            "wrong_answers": wrong,
            "p50_before_kill_ms": round(typical, 2),
            "max_latency_after_kill_ms": round(max((e - s) * 1000 for s, e, _, _ in after), 1),
            "first_partial_s": round(partial[0][1] - killed, 2) if partial else None,
            "recovered_s": round(disrupted[-1][1] - killed, 2) if disrupted else 0.0,
            "complete_after_recovery": all(a[3].complete for a in after if a not in disrupted),
            "rss_mib_built": [round(r, 1) for s, r in enumerate(rss) if s != KILLED],
            "rss_mib_restarted": round(rss[KILLED], 1),
        }
    finally:
        index.close()


# -- int8 batch dependence -----------------------------------------------------------------------


def batch_dependence(corpus: list[dict], n: int) -> dict[str, Any]:
    """Max |difference| of the first ``n`` documents' vectors encoded all together and
    encoded grouped by their shard of 4 (as shards encode them), per variant."""
    docs = corpus[:n]
    texts = [f"{d['title']} {d['text']}" if d.get("title") else d["text"] for d in docs]
    groups = [[i for i, d in enumerate(docs) if shard_of(d["_id"], 4) == s] for s in range(4)]
    out: dict[str, Any] = {"documents": n}
    for variant in ("int8", "fp32"):
        encoder = Encoder.load(variant=variant)
        together = encoder.encode(texts)
        apart = np.zeros_like(together)
        for group in groups:
            apart[group] = encoder.encode([texts[i] for i in group])
        again = encoder.encode(texts)
        diff = np.abs(together - apart)
        cosine = np.sum(together * apart, axis=1)
        out[variant] = {
            "max_abs_diff": float(diff.max()),
            "documents_differing": int((diff.max(axis=1) > 0).sum()),
            "least_cosine": float(cosine.min()),
            "same_batch_again_max_abs_diff": float(np.abs(together - again).max()),
        }
    return out


# -- main -----------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300, help="claims per load pass")
    parser.add_argument("--batch-docs", type=int, default=128, help="documents of int8_batches")
    parser.add_argument("--json", type=Path, help="also write every record to this file")
    args = parser.parse_args()

    dataset = load_beir(DEFAULT_DATASET)
    corpus = dataset.corpus
    queries = list(dataset.queries.values())[: args.queries]
    cache = EmbeddingCache()
    records: list[dict[str, Any]] = []

    def emit(record: dict[str, Any]) -> None:
        records.append(record)
        print(json.dumps(record), flush=True)

    HybridIndex.build(corpus, dense_options=DENSE, embedding_cache=cache)  # cache filled
    start = time.perf_counter()
    single = HybridIndex.build(corpus, dense_options=DENSE, embedding_cache=cache)
    built = time.perf_counter() - start
    reference = query_load(lambda q: single.search([q], 10, num_threads=1), queries)
    expected = [single.search([q], 10, num_threads=1).doc_ids[0] for q in queries]
    with tempfile.TemporaryDirectory(prefix="scaling-") as tmp:
        root = Path(tmp)
        single.save(root / "single")
        emit(
            {
                "index": "single",
                "documents": len(single),
                "build_s": round(built, 2),
                **reference,
                "disk_bytes": disk(root / "single"),
            }
        )
        single.close()
        ray.init(
            num_cpus=4, include_dashboard=False, log_to_driver=False, _temp_dir=str(root / "ray")
        )
        try:
            for n in SHARDS:
                start = time.perf_counter()
                index = ShardedIndex.build(
                    corpus,
                    root / f"n{n}",
                    n_shards=n,
                    build_options={"embedding_cache": True, "dense_options": DENSE},
                    batch_size=len(corpus),
                )
                built = time.perf_counter() - start
                try:
                    load = query_load(lambda q, i=index: i.search([q], 10, num_threads=1), queries)
                    same = [index.search([q], 10, num_threads=1).doc_ids[0] for q in queries]
                    overlap = statistics.fmean(
                        len(set(a) & set(b)) / max(len(b), 1)
                        for a, b in zip(same, expected, strict=True)
                    )
                    emit(
                        {
                            "index": f"shards_{n}",
                            "documents": len(index),
                            "build_s": round(built, 2),
                            **load,
                            "overhead_p50_ms": round(load["p50_ms"] - reference["p50_ms"], 2),
                            "overhead_p95_ms": round(load["p95_ms"] - reference["p95_ms"], 2),
                            "top10_overlap_with_single": round(overlap, 4),
                            "identical_top10_queries": sum(
                                a == b for a, b in zip(same, expected, strict=True)
                            ),
                            **shard_rate(index, queries),
                            **traffic(index, queries[:50]),
                            **memory(index, root / f"n{n}"),
                        }
                    )
                finally:
                    index.close()
            emit({"index": "bare_actor", "rss_mib": round(bare_rss(root), 1)})
            for timeout_s in (2.0, 0.25):
                emit({"index": "kill_4_shards", **kill(corpus, queries[:20], root, timeout_s)})
        finally:
            ray.shutdown()
    emit({"index": "int8_batches", **batch_dependence(corpus, args.batch_docs)})
    emit({"cpus": os.cpu_count(), "load_average": os.getloadavg()})
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(records, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
