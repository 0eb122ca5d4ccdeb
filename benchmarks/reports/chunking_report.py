"""nDCG@10 and Recall@100 of each retrieval leg over whole documents (truncated at the model's
window for dense and SPLADE) against retrieval over chunks aggregated to documents, and of
their fusions.

For each collection named by ``--collections``: a BEIR-layout folder under ``--data`` (default
``../shared/data/beir``), or ``scifact-long`` (SciFact's test queries and qrels over
``--long-documents`` of its documents, every judged one kept, each text set among Wikipedia
summaries: ``long_documents.py``), test queries:

- documents: BM25 (defaults) over ``title + " " + text``; dense: the same text through the int8
  all-MiniLM-L6-v2 (which reads the first 256 tokens), exact search; SPLADE (collections in
  ``--splade``): ``SpladeEncoder.load()`` (splade-tiny, 256 tokens) and ``SpladeIndex``.
- chunks: ``Chunker.load()`` (200 tokens, 40 of overlap) cuts each document's ``text``; each
  chunk is indexed by every leg as ``title + " " + chunk.text``; the top ``--top-chunks``
  chunks of a query are aggregated to their documents by ``max`` (MaxP: a document's best
  chunk), ``sum`` (of its chunks in the top list) and ``first`` (the score of its first chunk
  only, a document whose first chunk is not in the top list is not retrieved).
- fused, by ``fuse``'s default method at the engine's default depth (100): (a) BM25 over
  documents + truncated dense (the engine today), (b) BM25 over documents + dense chunks by the
  dense leg's best aggregation, (c) BM25 chunks + dense chunks, each by its leg's best.

Dense embeddings go through the embedding cache, so a rerun encodes nothing (SPLADE vectors
are not cached: it is timed). Each chunked variant is compared with its leg over documents,
(b) and (c) with (a), per query: a two-sided paired t-test and a two-sided paired
randomization test (sign flips); the best aggregation per leg by nDCG@10 is marked (choosing
it after the fact is not paid for in its p-values)::

    PYTHONPATH=. python benchmarks/reports/chunking_report.py \\
        --collections scifact,nfcorpus-partial,scifact-long --splade scifact --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: shared helpers
import long_documents
from prf_report import sign_flip_p  # the paired randomization test of the feedback report
from scipy import stats

from hybrid_engine import (
    BM25Index,
    DenseIndex,
    EmbeddingCache,
    Encoder,
    SearchResult,
    SpladeEncoder,
    SpladeIndex,
    fuse,
)
from hybrid_engine.chunking import Chunk, Chunker
from hybrid_engine.chunking.tokens import count_each
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.corpus import document_text, document_title
from hybrid_engine.evaluation import evaluate, load_beir, run_from_results
from hybrid_engine.evaluation.runner import documents_with_text
from hybrid_engine.models.session import load_tokenizer
from hybrid_engine.models.store import BI_ENCODER, read_model
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH

METRICS = ("ndcg@10", "recall@100")
AGGREGATIONS = ("max", "sum", "first")
LONG = "scifact-long"
"""The name of the long-document set built from SciFact (``long_collection``)."""
FILLER_POOL = 5000
"""Wikipedia summaries sampled as the long set's filler texts."""
WINDOW = 254
"""Text tokens all-MiniLM-L6-v2 reads: 256 with [CLS] and [SEP]."""


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


def mean_of(values: dict[str, np.ndarray]) -> dict[str, float]:
    """Each metric's mean over the queries."""
    return {metric: float(v.mean()) for metric, v in values.items()}


def timed(work: Callable[[], Any]) -> tuple[Any, float]:
    """``work()`` and its wall seconds."""
    start = time.perf_counter()
    value = work()
    return value, time.perf_counter() - start


def leg_runs(
    search: Callable[[int], SearchResult],
    search_chunks: Callable[[int], SearchResult],
    parents: np.ndarray,
    first: np.ndarray,
    n_docs: int,
    top_chunks: int,
) -> dict[str, SearchResult]:
    """One leg's document ranking and its chunk rankings aggregated each way."""
    runs = {"documents": search(DEFAULT_DEPTH)}
    found = search_chunks(top_chunks)
    for how in AGGREGATIONS:
        runs[how] = aggregate(found, parents, first, how, n_docs)
    return runs


def saved_bytes(index: BM25Index) -> int:
    """Disk bytes of ``index`` saved to a temporary directory."""
    with tempfile.TemporaryDirectory() as folder:
        index.save(Path(folder) / "index")
        return sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())


def collection_report(
    collection: Collection, encoder: Encoder, top_chunks: int, splade: bool
) -> dict[str, Any]:
    """Every figure of one collection's test queries."""
    corpus, query_texts = collection.corpus, collection.query_texts
    doc_ids = [doc["_id"] for doc in corpus]
    cache = EmbeddingCache()
    seconds: dict[str, float] = {}

    chunks, seconds["chunk"] = timed(lambda: Chunker.load().chunk_documents(corpus))
    position = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    parents = np.array([position[c.parent_id] for c in chunks], np.int64)
    first = np.array([c.position == 0 for c in chunks])
    doc_texts = [document_text(doc, i)[0] for i, doc in enumerate(corpus)]
    texts = chunk_texts(corpus, chunks)
    doc_vectors, seconds["dense_documents"] = timed(lambda: cache.encode(encoder, doc_texts))
    chunk_vectors, seconds["dense_chunks"] = timed(lambda: cache.encode(encoder, texts))
    queries = encoder.encode(query_texts)

    legs: dict[str, dict[str, SearchResult]] = {}
    bm25_docs, seconds["bm25_documents"] = timed(lambda: BM25Index.build(corpus))
    bm25_chunks, seconds["bm25_chunks"] = timed(lambda: BM25Index.build(texts))
    legs["bm25"] = leg_runs(
        lambda k: bm25_docs.search(query_texts, k),
        lambda k: bm25_chunks.search(query_texts, k),
        parents,
        first,
        len(corpus),
        top_chunks,
    )
    legs["dense"] = leg_runs(
        lambda k: exact_index(doc_vectors).search(queries, k),
        lambda k: exact_index(chunk_vectors).search(queries, k),
        parents,
        first,
        len(corpus),
        top_chunks,
    )
    if splade:
        sparse = SpladeEncoder.load()
        splade_docs, seconds["splade_documents"] = timed(
            lambda: SpladeIndex.build(doc_texts, encoder=sparse)
        )
        splade_chunks, seconds["splade_chunks"] = timed(
            lambda: SpladeIndex.build(texts, encoder=sparse)
        )
        legs["splade"] = leg_runs(
            lambda k: splade_docs.search(query_texts, k),
            lambda k: splade_chunks.search(query_texts, k),
            parents,
            first,
            len(corpus),
            top_chunks,
        )

    def scores(result: SearchResult) -> dict[str, np.ndarray]:
        return per_query(result, collection.query_ids, collection.qrels, doc_ids)

    values = {leg: {v: scores(r) for v, r in runs.items()} for leg, runs in legs.items()}
    best = {
        leg: max(AGGREGATIONS, key=lambda how: row[how]["ndcg@10"].mean())
        for leg, row in values.items()
    }
    fused_inputs = {
        "a: BM25 documents + dense truncated": ("documents", "documents"),
        "b: BM25 documents + dense chunks": ("documents", best["dense"]),
        "c: BM25 chunks + dense chunks": (best["bm25"], best["dense"]),
    }
    fused = {
        name: scores(
            fuse([legs["bm25"][lex], legs["dense"][den]], DEFAULT_DEPTH, depth=DEFAULT_DEPTH)
        )
        for name, (lex, den) in fused_inputs.items()
    }
    base = fused["a: BM25 documents + dense truncated"]
    dim = doc_vectors.shape[1]
    return {
        "means": {
            **{leg: {v: mean_of(s) for v, s in row.items()} for leg, row in values.items()},
            "fused": {name: mean_of(s) for name, s in fused.items()},
        },
        "best": best,
        "fused_inputs": {name: list(pair) for name, pair in fused_inputs.items()},
        "tests": {
            **{
                leg: {how: compare(row["documents"], row[how]) for how in AGGREGATIONS}
                for leg, row in values.items()
            },
            "fused": {name: compare(base, s) for name, s in list(fused.items())[1:]},
        },
        "sizes": {
            "documents": len(corpus),
            "chunks": len(chunks),
            "chunked_documents": int(np.count_nonzero(np.bincount(parents) > 1)),
            "dense_documents_bytes": len(corpus) * dim * 4,
            "dense_chunks_bytes": len(chunks) * dim * 4,
            "bm25_documents_bytes": saved_bytes(bm25_docs),
            "bm25_chunks_bytes": saved_bytes(bm25_chunks),
        },
        "queries": len(base["ndcg@10"]),
        "top_chunks": top_chunks,
        "seconds": seconds,
        **collection.notes,
    }


LEG_NAMES = {"bm25": "BM25", "dense": "dense", "splade": "SPLADE"}


def markdown(name: str, report: dict[str, Any]) -> str:
    """The collection's tables: every ranking's means, the paired tests, the sizes."""
    means, sizes, tests = report["means"], report["sizes"], report["tests"]
    legs = [leg for leg in LEG_NAMES if leg in report["best"]]
    lines = [
        f"| {name} ({report['queries']} queries) | "
        + " | ".join(f"{LEG_NAMES[leg]} nDCG@10 | R@100" for leg in legs)
        + " |",
        "|---" * (1 + 2 * len(legs)) + "|",
    ]
    for variant in ("documents", *AGGREGATIONS):
        label = "whole (dense, SPLADE: truncated)" if variant == "documents" else variant
        cells = []
        for leg in legs:
            row = means[leg][variant]
            bold = "**" if variant == report["best"][leg] else ""
            cells.append(f"{bold}{row['ndcg@10']:.4f}{bold} | {row['recall@100']:.4f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "| fused (DBSF, depth 100) | nDCG@10 | R@100 |", "|---|---|---|"]
    for fused, row in means["fused"].items():
        lex, den = report["fused_inputs"][fused]
        lines.append(
            f"| {fused} ({lex} / {den}) | {row['ndcg@10']:.4f} | {row['recall@100']:.4f} |"
        )
    lines += [
        "",
        "| vs whole | metric | Δ | wins / losses | p (t / rand) |",
        "|---" * 5 + "|",
    ]
    rows = [(f"{LEG_NAMES[leg]} {how}", tests[leg][how]) for leg in legs for how in AGGREGATIONS]
    rows += [(f"fused {fused[:1]} vs a", t) for fused, t in tests["fused"].items()]
    for label, test in rows:
        for metric, t in test.items():
            lines.append(
                f"| {label} | {metric} | {t['delta']:+.4f} | {t['wins']} / {t['losses']} "
                f"| {t['p_t']:.3f} / {t['p_rand']:.3f} |"
            )
    mib = 2**20
    lines += [
        "",
        f"Sizes: {sizes['documents']:,} documents, {sizes['chunks']:,} chunks "
        f"({sizes['chunks'] / sizes['documents']:.2f} per document, "
        f"{sizes['chunked_documents']:,} documents in more than one); dense float32 "
        f"{sizes['dense_documents_bytes'] / mib:.1f} MiB vs {sizes['dense_chunks_bytes'] / mib:.1f}"
        f" MiB; saved BM25 {sizes['bm25_documents_bytes'] / mib:.1f} MiB vs "
        f"{sizes['bm25_chunks_bytes'] / mib:.1f} MiB. Top {report['top_chunks']} chunks. "
        "Seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in report["seconds"].items()) + ".",
    ]
    return "\n".join(lines)


@dataclass(frozen=True)
class Collection:
    """A corpus with judged test queries, and notes on how it was made."""

    corpus: list[dict[str, Any]]
    query_ids: list[str]
    query_texts: list[str]
    qrels: dict[str, dict[str, int]]
    notes: dict[str, Any]


def beir_collection(folder: Path) -> Collection:
    """A BEIR folder's documents with text and its test queries."""
    dataset = load_beir(folder, "test")
    queries = dataset.queries
    return Collection(
        documents_with_text(dataset), list(queries), list(queries.values()), dataset.qrels, {}
    )


def long_collection(folder: Path, fillers: Path, n_documents: int, seed: int) -> Collection:
    """``scifact-long``: ``n_documents`` of ``folder``'s documents (every judged one kept),
    each lengthened among ``FILLER_POOL`` texts of ``fillers`` (``long_documents``)."""
    base = beir_collection(folder)
    sampled = long_documents.sample_documents(base.corpus, base.qrels, n_documents, seed)
    pool = long_documents.read_fillers(fillers, FILLER_POOL, seed)
    tokenizer = load_tokenizer(read_model(None, kind=BI_ENCODER))
    tokenizer.no_truncation()
    corpus, placements = long_documents.lengthen(
        sampled, pool, lambda texts: count_each(tokenizer, texts), seed=seed
    )
    before = np.array([p.tokens_before for p in placements])
    tokens = np.array([p.tokens for p in placements])
    notes = {
        "long": {
            "seed": seed,
            "filler_pool": FILLER_POOL,
            "tokens_median": float(np.median(tokens)),
            "tokens_min": int(tokens.min()),
            "tokens_max": int(tokens.max()),
            "abstract_past_window": int((before >= WINDOW).sum()),
            "abstract_at_start": int((before == 0).sum()),
        }
    }
    return Collection(corpus, base.query_ids, base.query_texts, base.qrels, notes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET.parent)
    parser.add_argument(
        "--collections", default="scifact", help=f"comma-separated folder names, or {LONG}"
    )
    parser.add_argument("--splade", default="scifact", help="collections with a SPLADE leg")
    parser.add_argument("--top-chunks", type=int, default=1000, help="chunks searched per query")
    parser.add_argument("--fillers", type=Path, default=long_documents.WIKIPEDIA)
    parser.add_argument("--long-documents", type=int, default=1000, help=f"documents of {LONG}")
    parser.add_argument("--seed", type=int, default=0, help=f"seed of {LONG}")
    parser.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    args = parser.parse_args()
    names = args.collections.split(",")
    folders = {name: args.data / ("scifact" if name == LONG else name) for name in names}
    missing = [str(f) for f in folders.values() if not (f / "corpus.jsonl").is_file()]
    if missing:
        print(f"no BEIR collection at {', '.join(missing)}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    encoder = Encoder.load(variant="int8")
    splade = set(args.splade.split(",")) if args.splade else set()
    reports = {}
    for name, folder in folders.items():
        collection = (
            long_collection(folder, args.fillers, args.long_documents, args.seed)
            if name == LONG
            else beir_collection(folder)
        )
        reports[name] = collection_report(collection, encoder, args.top_chunks, name in splade)
        print(markdown(name, reports[name]), end="\n\n", flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(reports, indent=2) + "\n", encoding="utf-8")
    print(f"wall time {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
