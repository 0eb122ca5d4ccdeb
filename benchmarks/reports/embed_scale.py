"""Embed the scale corpus (or a slice of it) and the MS MARCO queries with the default encoder.

Every embedding goes through the embedding cache (``EmbeddingCache()``, the default folder), so
a second run, or ``HybridIndex.build(texts, embedding_cache=EmbeddingCache())`` over the same
texts with the same encoder, costs only the lookups. Documents are encoded in chunks of
``--chunk`` texts, each cached as it finishes: a run that is stopped resumes where it stopped.

Two modes:

``--docs all``
    All 253,928 documents of gcide + wordnet + Wikipedia summaries (``load_scale_texts``, the
    corpus order: row ``i`` is document ``i``) and all 6,980 MS MARCO dev-small queries, written
    to the fixed folder ``scale_dir()`` (``$HYBRID_ENGINE_SCALE``, else
    ``~/.cache/hybrid_engine/scale``) as ``scale-docs-<variant>.npy`` and
    ``msmarco-queries-<variant>.npy`` (float32, ``(n, 384)``, unit rows), with
    ``scale-<variant>.json`` naming the model hash and the counts.
    ``benchmarks/reports/scale_corpus.py`` and the ``scale`` benchmarks read them there.
``--docs N``
    Every 2nd document, the first ``N`` of them (real text of every source), and the first
    ``--queries`` queries, written to ``--out`` as ``scale-docs.npy`` and ``msmarco-queries.npy``.

    PYTHONPATH=. python benchmarks/reports/embed_scale.py --docs all --threads 2
    PYTHONPATH=. python benchmarks/reports/embed_scale.py --docs 100000 --out runs/
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared helpers
from bench_common import load_scale_texts, read_jsonl

from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.storage import user_cache_dir

DATA = DEFAULT_DATASET.parents[1]
QUERIES = Path("queries") / "msmarco-passage-dev-small.jsonl"
SCALE_ENV = "HYBRID_ENGINE_SCALE"
"""Environment variable naming the folder of the cached scale vectors."""


def scale_dir() -> Path:
    """``$HYBRID_ENGINE_SCALE``, else ``~/.cache/hybrid_engine/scale``: the cached scale
    vectors (``--docs all``) and the derived corpora of ``scale_corpus.py``."""
    return user_cache_dir(SCALE_ENV, "scale")


def scale_slice(data: Path, n_docs: int) -> list[str]:
    """Every 2nd scale document, the first ``n_docs`` of them."""
    return load_scale_texts(data)[::2][:n_docs]


def query_texts(data: Path) -> list[str]:
    """The 6,980 MS MARCO passage dev-small queries, in file order."""
    return [q["text"] for q in read_jsonl(data / QUERIES)]


def encode_chunked(
    encoder: Encoder, cache: EmbeddingCache, texts: list[str], out: np.ndarray, chunk: int
) -> None:
    """Fill ``out`` (``(len(texts), dim)``) with the embeddings of ``texts``, ``chunk`` texts
    per cache call (each cached when done), printing the rate of each chunk."""
    start = time.perf_counter()
    for lo in range(0, len(texts), chunk):
        t0 = time.perf_counter()
        out[lo : lo + chunk] = cache.encode(encoder, texts[lo : lo + chunk])
        done = min(lo + chunk, len(texts))
        elapsed = time.perf_counter() - start
        print(
            f"{done}/{len(texts)} texts, chunk {chunk / (time.perf_counter() - t0):.0f}/s, "
            f"{elapsed:.0f}s so far, ~{elapsed / done * (len(texts) - done):.0f}s left",
            flush=True,
        )


def write_npy(
    path: Path, encoder: Encoder, cache: EmbeddingCache, texts: list[str], chunk: int
) -> None:
    """Encode ``texts`` into a new ``.npy`` at ``path``, which appears only once complete."""
    partial = path.with_name(path.name + ".partial.npy")
    array = np.lib.format.open_memmap(partial, "w+", np.float32, (len(texts), encoder.dim))
    encode_chunked(encoder, cache, texts, array, chunk)
    array.flush()
    del array
    partial.replace(path)


def embed_all(data: Path, out: Path, chunk: int, threads: int) -> None:
    """``--docs all``: every scale document and every query, into ``out``."""
    encoder = Encoder.load(num_threads=threads)
    cache = EmbeddingCache()
    variant = encoder.variant
    out.mkdir(parents=True, exist_ok=True)
    texts = load_scale_texts(data)
    queries = query_texts(data)
    print(f"{len(texts)} documents, {len(queries)} queries, {encoder!r}", flush=True)
    start = time.perf_counter()
    write_npy(out / f"msmarco-queries-{variant}.npy", encoder, cache, queries, chunk)
    write_npy(out / f"scale-docs-{variant}.npy", encoder, cache, texts, chunk)
    seconds = time.perf_counter() - start
    manifest = {
        "model": encoder.name,
        "variant": variant,
        "model_hash": encoder.model_hash,
        "n_docs": len(texts),
        "n_queries": len(queries),
        "dim": encoder.dim,
        "docs": f"scale-docs-{variant}.npy",
        "queries": f"msmarco-queries-{variant}.npy",
        "seconds": round(seconds, 1),
        "threads": threads,
    }
    (out / f"scale-{variant}.json").write_text(json.dumps(manifest, indent=2) + "\n")
    print(json.dumps(manifest, indent=2))


def embed_slice(data: Path, out: Path, n_docs: int, n_queries: int, threads: int | None) -> None:
    """``--docs N``: a slice of the corpus and the first queries, into ``out``."""
    encoder = Encoder.load(num_threads=threads)
    cache = EmbeddingCache()
    texts = scale_slice(data, n_docs)
    queries = query_texts(data)[:n_queries]
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    docs = cache.encode(encoder, texts, show_progress=True)
    print(f"{len(texts)} documents in {time.perf_counter() - start:.1f}s")
    np.save(out / "scale-docs.npy", docs)
    np.save(out / "msmarco-queries.npy", cache.encode(encoder, queries))
    print(f"wrote {out / 'scale-docs.npy'} and {out / 'msmarco-queries.npy'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default="100000", help="a count, or 'all' (see above)")
    parser.add_argument("--queries", type=int, default=1000, help="with --docs N only")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=None, help="default: scale_dir() or runs/")
    parser.add_argument("--chunk", type=int, default=4096, help="texts per cached chunk")
    parser.add_argument("--threads", type=int, default=None, help="ONNX Runtime threads")
    args = parser.parse_args()
    if args.docs == "all":
        embed_all(args.data, args.out or scale_dir(), args.chunk, args.threads or 2)
    else:
        embed_slice(args.data, args.out or Path("runs"), int(args.docs), args.queries, args.threads)


if __name__ == "__main__":
    main()
