"""nDCG@10, Recall@100 and latency (generation included) of the query strategies against the
plain hybrid search, on a seeded sample of each collection's test queries; and a self-query
experiment on synthetic metadata.

Strategies: ``hybrid`` (each query searched alone, as the strategies search), ``hyde``,
``decompose``, ``multi-hop`` and ``fused-strategies`` (RRF of the four, which is what
``fuse_strategies`` computes, here fused from the four runs instead of rerunning them), all at
their defaults, top 100. Paired sign-flip tests (``prf_report.sign_flip_p``) against
``hybrid``.

Self-query: every document gets a seeded synthetic ``year`` (2000-2024) and ``type``
(article, review, letter); each sampled query is rewritten to name its first relevant
document's, "QUERY (a review from 2015)", and the schema is declared. Reported: the fraction
of generated filters that validate, the fraction that select exactly the intended documents,
and nDCG@10 unfiltered, with self-query, and with the intended (oracle) filter.

    PYTHONPATH=. python benchmarks/reports/strategy_report.py --queries 50 \\
        scifact nfcorpus-partial --json /work/runs/strategies/report.json
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine import EmbeddingCache, Encoder, HybridIndex, fuse
from hybrid_engine.evaluation import Dataset, evaluate, load_beir, run_from_results, sample_queries
from hybrid_engine.evaluation.runner import DEFAULT_GENERATOR, build_hybrid, documents_with_text
from hybrid_engine.metadata import Filter
from hybrid_engine.metadata.columns import MetadataColumns
from hybrid_engine.result import SearchResult
from hybrid_engine.strategies import (
    Generate,
    MetadataSchema,
    SchemaField,
    SelfQueryWarning,
    StrategyResult,
    decompose,
    hyde,
    multi_hop,
    plain_search,
    self_query,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prf_report import sign_flip_p

METRICS = ("ndcg@10", "recall@100")
DEPTH = 100
TYPES = ("article", "review", "letter")
SCHEMA = MetadataSchema(
    (
        SchemaField("year", "int", range=(2000, 2024), description="publication year"),
        SchemaField("type", "str", values=TYPES, description="kind of publication"),
    )
)


def per_query(
    result: SearchResult, dataset: Dataset, doc_ids: Sequence[str]
) -> dict[str, np.ndarray]:
    """Each metric per query, in ``dataset.queries`` order."""
    ids = list(dataset.queries)
    run = run_from_results(result.ids, result.scores, ids, doc_ids)
    values = evaluate(run, dataset.qrels, METRICS, per_query=True).per_query
    return {m: np.array([values[q][m] for q in ids]) for m in METRICS}


def latencies(result: StrategyResult) -> np.ndarray:
    """Milliseconds per query: everything its trace timed (generation, retrieval, fusion)."""
    return np.array([sum(t.timings.values()) for t in result.traces])


def summary(
    values: dict[str, np.ndarray], ms: np.ndarray, base: dict[str, np.ndarray] | None
) -> dict[str, Any]:
    row: dict[str, Any] = {m: float(v.mean()) for m, v in values.items()}
    row["p50_ms"], row["p95_ms"] = float(np.percentile(ms, 50)), float(np.percentile(ms, 95))
    if base is not None:
        for m in METRICS:
            d = values[m] - base[m]
            row[f"{m}_delta"] = float(d.mean())
            row[f"{m}_p"] = sign_flip_p([d])
    return row


def strategies_on(dataset: Dataset, generate: Generate, threads: int | None) -> dict[str, Any]:
    """The five strategies' figures on ``dataset``'s queries."""
    engine = build_hybrid(dataset, threads)
    queries = list(dataset.queries.values())
    runs: dict[str, StrategyResult] = {
        "hybrid": plain_search(engine, queries, DEPTH),
        "hyde": hyde(engine, queries, generate, DEPTH, depth=DEPTH),
        "decompose": decompose(engine, queries, generate, DEPTH, depth=DEPTH),
        "multi-hop": multi_hop(engine, queries, generate, DEPTH, depth=DEPTH),
    }
    fused = fuse(list(runs.values()), DEPTH, method="rrf", depth=DEPTH)
    values = {name: per_query(run, dataset, engine.doc_ids) for name, run in runs.items()}
    values["fused-strategies"] = per_query(fused, dataset, engine.doc_ids)
    ms = {name: latencies(run) for name, run in runs.items()}
    ms["fused-strategies"] = sum(ms.values())  # type: ignore[assignment]
    rows = {
        name: summary(values[name], ms[name], None if name == "hybrid" else values["hybrid"])
        for name in values
    }
    examples = [
        {"query": t.query, **{k: _jsonable(v) for k, v in t.generated.items()}}
        for run in runs.values()
        for t in run.traces[:2]
        if t.generated
    ]
    return {"queries": len(queries), "strategies": rows, "examples": examples}


def synthetic_metadata(n: int, seed: int) -> list[dict[str, Any]]:
    """Seeded ``year`` and ``type`` for ``n`` documents."""
    rng = np.random.default_rng(seed)
    years = rng.integers(2000, 2025, size=n)
    kinds = rng.integers(0, len(TYPES), size=n)
    return [{"year": int(y), "type": TYPES[int(t)]} for y, t in zip(years, kinds, strict=True)]


def self_query_on(
    dataset: Dataset, generate: Generate, threads: int | None, seed: int
) -> dict[str, Any]:
    """The self-query experiment on ``dataset`` with synthetic metadata."""
    corpus = documents_with_text(dataset)
    metadata = synthetic_metadata(len(corpus), seed)
    documents = [{**doc, "metadata": meta} for doc, meta in zip(corpus, metadata, strict=True)]
    engine = HybridIndex.build(
        documents,
        encoder=Encoder.load(num_threads=threads),
        embedding_cache=EmbeddingCache(),
        num_threads=threads,
    )
    position = {doc["_id"]: i for i, doc in enumerate(corpus)}
    columns = MetadataColumns.from_records(metadata)
    kept = [
        q
        for q in dataset.queries
        if any(d in position and g > 0 for d, g in dataset.qrels[q].items())
    ]
    asked: dict[str, str] = {}
    intended: list[dict[str, Any]] = []
    for q in kept:
        first = next(d for d, g in dataset.qrels[q].items() if d in position and g > 0)
        meta = metadata[position[first]]
        asked[q] = f"{dataset.queries[q]} (a {meta['type']} from {meta['year']})"
        intended.append(dict(meta))
    rewritten = Dataset(dataset.name, dataset.corpus, asked, {q: dataset.qrels[q] for q in kept})
    texts = list(asked.values())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SelfQueryWarning)
        result = self_query(engine, texts, generate, SCHEMA, DEPTH, depth=DEPTH)
    plain = plain_search(engine, texts, DEPTH)
    oracle_rows = [
        engine.search([t], DEPTH, depth=DEPTH, filter=f)
        for t, f in zip(texts, intended, strict=True)
    ]
    oracle = SearchResult(
        np.concatenate([r.ids for r in oracle_rows]),
        np.concatenate([r.scores for r in oracle_rows]),
    )
    proposals = [t.generated["self-query"] for t in result.traces]
    valid = [p is not None and p.valid for p in proposals]
    exact = [
        ok
        and p.spec
        and np.array_equal(Filter.compile(p.spec).mask(columns), Filter.compile(f).mask(columns))
        for ok, p, f in zip(valid, proposals, intended, strict=True)
    ]
    scores = {
        "unfiltered": per_query(plain, rewritten, engine.doc_ids),
        "self-query": per_query(result, rewritten, engine.doc_ids),
        "oracle filter": per_query(oracle, rewritten, engine.doc_ids),
    }
    rows = {name: {m: float(v.mean()) for m, v in s.items()} for name, s in scores.items()}
    for m in METRICS:
        d = scores["self-query"][m] - scores["unfiltered"][m]
        rows["self-query"][f"{m}_delta"] = float(d.mean())
        rows["self-query"][f"{m}_p"] = sign_flip_p([d])
    rows["self-query"]["p50_ms"] = float(np.percentile(latencies(result), 50))
    rows["self-query"]["p95_ms"] = float(np.percentile(latencies(result), 95))
    return {
        "queries": len(texts),
        "valid_fraction": float(np.mean(valid)) if valid else 0.0,
        "intended_fraction": float(np.mean([bool(e) for e in exact])) if exact else 0.0,
        "rows": rows,
        "examples": [
            {
                "query": t,
                "output": p.raw if p else None,
                "valid": bool(v),
                "reason": p.reason if p else None,
            }
            for t, p, v in list(zip(texts, proposals, valid, strict=True))[:5]
        ],
    }


def _jsonable(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return {k: getattr(value, k) for k in value.__dataclass_fields__}
    return value


def report(
    folders: Sequence[Path], generate: Generate, n: int, seed: int, threads: int | None = None
) -> dict[str, Any]:
    """Both experiments on each collection's seeded sample of ``n`` test queries."""
    out: dict[str, Any] = {}
    for folder in folders:
        dataset = sample_queries(load_beir(folder, "test"), n, seed)
        out[dataset.name] = {
            "strategies": strategies_on(dataset, generate, threads),
            "self_query": self_query_on(dataset, generate, threads, seed),
        }
    return out


def print_report(figures: dict[str, Any]) -> None:
    for name, parts in figures.items():
        block = parts["strategies"]
        print(f"\n{name}: {block['queries']} queries")
        print(
            f"{'strategy':<18}{'nDCG@10':>9}{'Δ':>8}{'p':>7}{'R@100':>8}{'Δ':>8}{'p':>7}"
            f"{'p50 ms':>9}{'p95 ms':>9}"
        )
        for strategy, row in block["strategies"].items():
            cells = [f"{row['ndcg@10']:9.4f}"]
            cells.append(f"{row.get('ndcg@10_delta', 0):+8.4f}{row.get('ndcg@10_p', 1):7.3f}")
            cells.append(f"{row['recall@100']:8.4f}")
            cells.append(f"{row.get('recall@100_delta', 0):+8.4f}{row.get('recall@100_p', 1):7.3f}")
            print(f"{strategy:<18}{''.join(cells)}{row['p50_ms']:9.0f}{row['p95_ms']:9.0f}")
        sq = parts["self_query"]
        print(
            f"self-query ({sq['queries']} rewritten queries): {sq['valid_fraction']:.0%} of "
            f"filters valid, {sq['intended_fraction']:.0%} the intended one"
        )
        for label, row in sq["rows"].items():
            print(f"  {label:<16} nDCG@10 {row['ndcg@10']:.4f}  R@100 {row['recall@100']:.4f}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("collections", nargs="+", help="names under --data")
    parser.add_argument("--data", type=Path, default=Path("../shared/data/beir"))
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generator", default=DEFAULT_GENERATOR)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    from hybrid_engine.generation import load_generator

    generate = load_generator(args.generator)
    figures = report(
        [args.data / c for c in args.collections], generate, args.queries, args.seed, args.threads
    )
    figures["settings"] = {"queries": args.queries, "seed": args.seed, "generator": args.generator}
    print_report({k: v for k, v in figures.items() if k != "settings"})
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
