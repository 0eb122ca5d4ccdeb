"""Time ``HybridResult.doc_ids`` on SciFact (BM25 only): 300 queries x ``k = 5183`` (every
document), first access and a second one; and ``hits()`` (texts and metadata too) at
``k = 100`` (issue 24, defect 6).

    PYTHONPATH=. python scripts/result_ids_speed.py [--corpus ../shared/data/beir/scifact]

Prints the milliseconds of each access and of the per-hit reference (``Snapshot.doc_id``
of each position, what ``doc_ids`` did before).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from hybrid_engine import HybridIndex

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"
"""SciFact in the shared data folder beside the repository."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    with open(args.corpus / "corpus.jsonl", encoding="utf-8") as f:
        corpus = [json.loads(line) for line in f]
    with open(args.corpus / "queries.jsonl", encoding="utf-8") as f:
        queries = [json.loads(line)["text"] for line in f][: args.queries]
    engine = HybridIndex.build(corpus, retrievers=("bm25",))
    result = engine.search(queries, len(corpus))
    n_hits = int((result.ids >= 0).sum())
    print(f"{len(queries)} queries x k={len(corpus)}: {n_hits} hits")
    snapshot = result.snapshot
    assert snapshot is not None
    for name, read in (
        (
            "per-hit reference",
            lambda: [[snapshot.doc_id(int(i)) for i in r if i >= 0] for r in result.ids],
        ),
        ("doc_ids, first access", lambda: result.doc_ids),
        ("doc_ids, second access", lambda: result.doc_ids),
    ):
        start = time.perf_counter()
        read()
        print(f"{name:>24}: {(time.perf_counter() - start) * 1000:8.1f} ms")
    top = engine.search(queries, 100)
    for name, read in (
        (
            "per-hit reference",
            lambda: [[snapshot.hit(int(i), 0.0) for i in r if i >= 0] for r in top.ids],
        ),
        ("hits(), first call", top.hits),
        ("hits(), second call", top.hits),
    ):
        start = time.perf_counter()
        read()
        print(f"{name + ' (k=100)':>32}: {(time.perf_counter() - start) * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
