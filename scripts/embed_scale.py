"""Embed a slice of the scale corpus and a query set with the default encoder, for HNSW checks.

Writes ``<out>/scale-docs.npy`` (float32, ``(n, 384)``) and ``<out>/msmarco-queries.npy``, and
keeps every embedding in the embedding cache, so a second run (or the dense benchmarks) costs
only the lookups. The slice is every 2nd document of gcide + wordnet + Wikipedia summaries
(the corpus order), the first ``--docs`` of them: real text of every source.

    python scripts/embed_scale.py --docs 100000 --out runs/
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_common import load_scale_texts, read_jsonl

from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.models.bi_encoder import Encoder

DATA = DEFAULT_DATASET.parents[1]


def scale_slice(data: Path, n_docs: int) -> list[str]:
    """Every 2nd scale document, the first ``n_docs`` of them."""
    return load_scale_texts(data)[::2][:n_docs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=Path("runs"))
    args = parser.parse_args()
    encoder = Encoder.load()
    cache = EmbeddingCache()
    texts = scale_slice(args.data, args.docs)
    queries = [
        q["text"] for q in read_jsonl(args.data / "queries" / "msmarco-passage-dev-small.jsonl")
    ][: args.queries]
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    docs = cache.encode(encoder, texts, show_progress=True)
    print(f"{len(texts)} documents in {time.perf_counter() - start:.1f}s")
    np.save(args.out / "scale-docs.npy", docs)
    np.save(args.out / "msmarco-queries.npy", cache.encode(encoder, queries))
    print(f"wrote {args.out / 'scale-docs.npy'} and {args.out / 'msmarco-queries.npy'}")


if __name__ == "__main__":
    main()
