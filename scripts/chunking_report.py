"""nDCG@10 and Recall@100 of dense retrieval over whole documents truncated at the bi-encoder's
window against retrieval over chunks aggregated to documents, alone and fused with BM25.

For each BEIR-layout collection named by ``--collections`` under ``--data`` (default
``../shared/data/beir``), test queries:

- ``truncated``: the engine's dense leg, ``title + " " + text`` of each document encoded by
  the int8 all-MiniLM-L6-v2 (which reads the first 256 tokens), searched exactly.
- chunked: ``Chunker.load()`` (200 tokens, 40 of overlap) cuts each document's ``text``; each
  chunk is encoded as ``title + " " + chunk.text``; the top ``--top-chunks`` chunks of a query
  (exact search) are aggregated to their documents by ``max`` (MaxP: a document's best chunk),
  ``sum`` (of its chunks in the top list) and ``first`` (the score of its first chunk only,
  a document whose first chunk is not in the top list is not retrieved).
- ``+ bm25``: each dense ranking's top 100 fused with BM25's (defaults, whole documents) by
  ``fuse``'s default method at the engine's default depth (100).

Embeddings go through the embedding cache, so a rerun encodes nothing. Each chunked variant
is compared with truncation, dense and fused, per query: a two-sided paired t-test and a
two-sided paired randomization test (sign flips); the best variant by dense nDCG@10 is
marked (choosing it after the fact is not paid for in its p-values)::

    PYTHONPATH=. python scripts/chunking_report.py [--collections scifact] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from prf_report import sign_flip_p  # the paired randomization test of the feedback report
from scipy import stats

from hybrid_engine import BM25Index, DenseIndex, EmbeddingCache, Encoder, SearchResult, fuse
from hybrid_engine.chunking import Chunk, Chunker
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.corpus import document_text, document_title
from hybrid_engine.evaluation import evaluate, load_beir, run_from_results
from hybrid_engine.evaluation.runner import documents_with_text
from hybrid_engine.pipeline.engine import DEFAULT_DEPTH

METRICS = ("ndcg@10", "recall@100")
AGGREGATIONS = ("max", "sum", "first")


def chunk_texts(corpus: Sequence[dict[str, Any]], chunks: Sequence[Chunk]) -> list[str]:
    """``title + " " + chunk.text`` per chunk (the chunk's text alone for an untitled
    document), as ``document_text`` joins a whole document."""
    titles = {doc["_id"]: document_title(doc) for doc in corpus}
    return [f"{titles[c.parent_id]} {c.text}" if titles[c.parent_id] else c.text for c in chunks]


def exact_index(vectors: np.ndarray) -> DenseIndex:
    """A dense index over ``vectors`` that searches exactly (no graph built)."""
    return DenseIndex.from_vectors(vectors, exact_threshold=len(vectors) + 1)


def aggregate(
    found: SearchResult, parents: np.ndarray, first: np.ndarray, how: str, n_docs: int
) -> SearchResult:
    """Chunk hits to document hits, query by query.

    Parameters
    ----------
    found : SearchResult
        Chunk positions and scores, shape ``(n_queries, n)``, -1 / -inf padded.
    parents : numpy.ndarray
        int64, shape ``(n_chunks,)``: each chunk's document position.
    first : numpy.ndarray
        bool, shape ``(n_chunks,)``: whether the chunk is its document's first.
    how : {"max", "sum", "first"}
        A document's score: its best chunk's, the sum of its chunks', its first chunk's.
    n_docs : int
        Documents in the corpus.

    Returns
    -------
    SearchResult
        Document positions and float32 scores, shape ``(n_queries, n)``, rows sorted by
        descending score (ties by ascending position), padded with -1 / -inf.
    """
    n_queries, width = found.ids.shape
    ids = np.full((n_queries, width), -1, np.int64)
    scores = np.full((n_queries, width), -np.inf, np.float32)
    for row in range(n_queries):
        hits = found.ids[row] >= 0
        chunk_ids, chunk_scores = found.ids[row][hits], found.scores[row][hits].astype(np.float64)
        if how == "first":
            keep = first[chunk_ids]
            chunk_ids, chunk_scores = chunk_ids[keep], chunk_scores[keep]
        docs = parents[chunk_ids]
        total = np.full(n_docs, -np.inf)
        if how == "sum":
            total[np.unique(docs)] = 0.0
            np.add.at(total, docs, chunk_scores)
        else:
            np.maximum.at(total, docs, chunk_scores)
        held = np.flatnonzero(np.isfinite(total))
        order = held[np.lexsort((held, -total[held]))]
        ids[row, : len(order)] = order
        scores[row, : len(order)] = total[order]
    return SearchResult(ids, scores)


def per_query(
    result: SearchResult, query_ids: Sequence[str], qrels: Any, doc_ids: Sequence[str]
) -> dict[str, np.ndarray]:
    """Each metric per judged query, in ``qrels`` order."""
    run = run_from_results(result.ids, result.scores, query_ids, doc_ids)
    values = evaluate(run, qrels, METRICS, per_query=True).per_query
    return {m: np.array([row[m] for row in values.values()]) for m in METRICS}


def compare(base: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> dict[str, Any]:
    """Mean difference, wins / losses and paired p-values of each metric."""
    out: dict[str, Any] = {}
    for metric in METRICS:
        d = other[metric] - base[metric]
        t_p = float(stats.ttest_rel(other[metric], base[metric]).pvalue) if d.any() else 1.0
        out[metric] = {
            "delta": float(d.mean()),
            "p_t": t_p,
            "p_rand": sign_flip_p([d]),
            "wins": int((d > 0).sum()),
            "losses": int((d < 0).sum()),
        }
    return out


def timed(work: Callable[[], Any]) -> tuple[Any, float]:
    """``work()`` and its wall seconds."""
    start = time.perf_counter()
    value = work()
    return value, time.perf_counter() - start


def collection_report(folder: Path, encoder: Encoder, top_chunks: int) -> dict[str, Any]:
    """Every figure of one collection's test split."""
    dataset = load_beir(folder, "test")
    corpus = documents_with_text(dataset)
    doc_ids = [doc["_id"] for doc in corpus]
    query_ids, query_texts = list(dataset.queries), list(dataset.queries.values())
    cache = EmbeddingCache()
    seconds: dict[str, float] = {}

    chunks, seconds["chunk"] = timed(lambda: Chunker.load().chunk_documents(corpus))
    position = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    parents = np.array([position[c.parent_id] for c in chunks], np.int64)
    first = np.array([c.position == 0 for c in chunks])
    doc_texts = [document_text(doc, i)[0] for i, doc in enumerate(corpus)]
    doc_vectors, seconds["encode_documents"] = timed(lambda: cache.encode(encoder, doc_texts))
    texts = chunk_texts(corpus, chunks)
    chunk_vectors, seconds["encode_chunks"] = timed(lambda: cache.encode(encoder, texts))
    queries, seconds["encode_queries"] = timed(lambda: encoder.encode(query_texts))

    tick = time.perf_counter()
    dense = {"truncated": exact_index(doc_vectors).search(queries, top_chunks)}
    found = exact_index(chunk_vectors).search(queries, top_chunks)
    for how in AGGREGATIONS:
        dense[how] = aggregate(found, parents, first, how, len(corpus))
    bm25 = BM25Index.build(corpus).search(query_texts, DEFAULT_DEPTH)
    runs: dict[str, SearchResult] = {"bm25": bm25}
    for name, result in dense.items():
        runs[name] = result
        runs[f"{name} + bm25"] = fuse([bm25, result], DEFAULT_DEPTH, depth=DEFAULT_DEPTH)
    seconds["search_and_fuse"] = time.perf_counter() - tick

    values = {name: per_query(r, query_ids, dataset.qrels, doc_ids) for name, r in runs.items()}
    best = max(AGGREGATIONS, key=lambda how: values[how]["ndcg@10"].mean())
    dim = doc_vectors.shape[1]
    means = {name: {m: float(v.mean()) for m, v in row.items()} for name, row in values.items()}
    return {
        "means": means,
        "best": best,
        "tests": {
            how: {
                "dense": compare(values["truncated"], values[how]),
                "fused": compare(values["truncated + bm25"], values[f"{how} + bm25"]),
            }
            for how in AGGREGATIONS
        },
        "sizes": {
            "documents": len(corpus),
            "chunks": len(chunks),
            "documents_bytes": len(corpus) * dim * 4,
            "chunks_bytes": len(chunks) * dim * 4,
            "chunked_documents": int(np.count_nonzero(np.bincount(parents) > 1)),
        },
        "queries": len(values["bm25"]["ndcg@10"]),
        "top_chunks": top_chunks,
        "seconds": seconds,
    }


def markdown(name: str, report: dict[str, Any]) -> str:
    """The collection's tables: every ranking's means, the paired tests, the sizes."""
    means, sizes = report["means"], report["sizes"]
    lines = [
        f"| {name} ({report['queries']} queries) | nDCG@10 | R@100 | + BM25 nDCG@10 | R@100 |",
        "|---" * 5 + "|",
        f"| BM25 alone | {means['bm25']['ndcg@10']:.4f} | {means['bm25']['recall@100']:.4f} | | |",
    ]
    for variant in ("truncated", *AGGREGATIONS):
        alone, fused = means[variant], means[f"{variant} + bm25"]
        label = "truncated (256 tokens)" if variant == "truncated" else f"chunks, {variant}"
        lines.append(
            f"| {label} | {alone['ndcg@10']:.4f} | {alone['recall@100']:.4f} "
            f"| {fused['ndcg@10']:.4f} | {fused['recall@100']:.4f} |"
        )
    lines += [
        "",
        "| chunks vs truncated | leg | metric | Δ | wins / losses | p (t / rand) |",
        "|---" * 6 + "|",
    ]
    for how, legs in report["tests"].items():
        label = f"**{how}** (best)" if how == report["best"] else how
        for leg, tests in legs.items():
            for metric, t in tests.items():
                lines.append(
                    f"| {label} | {leg} | {metric} | {t['delta']:+.4f} | {t['wins']} / "
                    f"{t['losses']} | {t['p_t']:.3f} / {t['p_rand']:.3f} |"
                )
    ratio = sizes["chunks"] / sizes["documents"]
    lines += [
        "",
        f"Vectors: {sizes['documents']:,} documents, {sizes['documents_bytes'] / 2**20:.1f} MiB; "
        f"{sizes['chunks']:,} chunks ({ratio:.2f} per document; {sizes['chunked_documents']:,} "
        f"documents in more than one), {sizes['chunks_bytes'] / 2**20:.1f} MiB (float32). "
        f"Top {report['top_chunks']} chunks per query. Seconds: "
        + ", ".join(f"{k} {v:.1f}" for k, v in report["seconds"].items())
        + ".",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET.parent)
    parser.add_argument("--collections", default="scifact", help="comma-separated folder names")
    parser.add_argument("--top-chunks", type=int, default=1000, help="chunks searched per query")
    parser.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    args = parser.parse_args()
    folders = [args.data / name for name in args.collections.split(",")]
    missing = [str(f) for f in folders if not (f / "corpus.jsonl").is_file()]
    if missing:
        print(f"no BEIR collection at {', '.join(missing)}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    encoder = Encoder.load(variant="int8")
    reports = {}
    for folder in folders:
        reports[folder.name] = collection_report(folder, encoder, args.top_chunks)
        print(markdown(folder.name, reports[folder.name]), end="\n\n", flush=True)
    print(f"wall time {time.perf_counter() - start:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
