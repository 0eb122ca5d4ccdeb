"""nDCG@10 and Recall@100 of BM25 vs BM25 + RM3 and of dense vs dense + Rocchio, per collection,
with paired tests over the report queries; feedback settings chosen on tuning queries only.

For every BEIR-layout collection under ``--data`` (default ``../shared/data/beir``) the script
builds BM25 (defaults) and dense retrieval (the default bi-encoder, int8 all-MiniLM-L6-v2,
embeddings through the embedding cache) over the documents with text. Tuning and report
queries: SciFact's ``train`` qrels tune and its ``test`` qrels report; a collection with test
qrels only has its judged queries split in two halves by ``--seed`` (a permutation of the
sorted query ids): the first half tunes, the second reports.

On the tuning queries the settings of best nDCG@10 are chosen (ties: the earlier in the grid,
Anserini's defaults first): RM3 over fb_docs {10, 5} x fb_terms {10, 20} x original_weight
{0.5, 0.7}; Rocchio (alpha 1) over fb_docs {3, 5, 10} x beta {0.25, 0.5, 0.75, 1.0}. On the
report queries each method runs at its library defaults and at the tuned settings, against
its first pass: per-query differences, a two-sided paired t-test and a two-sided paired
randomization test (sign flips); the average's randomization test flips each collection's
queries apart, every collection weighing the same.

    PYTHONPATH=. python benchmarks/reports/prf_report.py [--dense scifact,med] [--json prf.json]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from hybrid_engine import RM3, BM25Index, DenseIndex, EmbeddingCache, Encoder, Rocchio
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.evaluation import available_splits, evaluate, load_beir, run_from_results
from hybrid_engine.evaluation.runner import documents_with_text
from hybrid_engine.feedback import rocchio as rocchio_defaults
from hybrid_engine.result import SearchResult

METRICS = ("ndcg@10", "recall@100")
DEPTH = 100
RM3_GRID = [
    {"fb_docs": d, "fb_terms": t, "original_weight": w}
    for d, t, w in itertools.product((10, 5), (10, 20), (0.5, 0.7))
]
ROCCHIO_GRID = [
    {"fb_docs": d, "alpha": 1.0, "beta": b}
    for d, b in itertools.product((3, 5, 10), (0.25, 0.5, 0.75, 1.0))
]
ROCCHIO_DEFAULTS = {
    "fb_docs": rocchio_defaults.DEFAULT_FB_DOCS,
    "alpha": rocchio_defaults.DEFAULT_ALPHA,
    "beta": rocchio_defaults.DEFAULT_BETA,
}
FLIPS = 10_000


@dataclass(frozen=True)
class Queries:
    """A set of queries with their judgments: what tunes or what reports."""

    ids: list[str]
    texts: list[str]
    qrels: dict[str, dict[str, int]]


def splits(folder: Path, seed: int) -> tuple[Queries, Queries, str]:
    """(tuning, report) queries of a collection, and how they were split."""
    test = load_beir(folder, "test")
    if "train" in available_splits(folder):
        train = load_beir(folder, "train")
        tune = Queries(list(train.queries), list(train.queries.values()), train.qrels)
        report = Queries(list(test.queries), list(test.queries.values()), test.qrels)
        return tune, report, "train qrels tune, test qrels report"
    ids = sorted(test.queries)
    order = np.random.default_rng(seed).permutation(len(ids))
    half = len(ids) // 2
    parts = [sorted(ids[i] for i in order[:half]), sorted(ids[i] for i in order[half:])]
    tune, report = (
        Queries(part, [test.queries[q] for q in part], {q: test.qrels[q] for q in part})
        for part in parts
    )
    return tune, report, f"test queries halved (seed {seed}): {half} tune, {len(ids) - half} report"


def per_query(
    result: SearchResult, queries: Queries, doc_ids: Sequence[str]
) -> dict[str, np.ndarray]:
    """Each metric per judged query, in ``queries.qrels`` order."""
    run = run_from_results(result.ids, result.scores, queries.ids, doc_ids)
    values = evaluate(run, queries.qrels, METRICS, per_query=True).per_query
    return {m: np.array([row[m] for row in values.values()]) for m in METRICS}


def means(result: SearchResult, queries: Queries, doc_ids: Sequence[str]) -> dict[str, float]:
    """Each metric's mean over the judged queries."""
    return {m: float(v.mean()) for m, v in per_query(result, queries, doc_ids).items()}


def sign_flip_p(groups: Sequence[np.ndarray], seed: int = 0) -> float:
    """Two-sided paired randomization test (random sign flips) of the mean over groups of
    each group's mean difference: one group tests a collection, several their average (each
    collection's queries flipped apart, every collection weighing the same)."""
    observed = abs(np.mean([g.mean() for g in groups]))
    if observed == 0.0:
        return 1.0
    rng = np.random.default_rng(seed)
    reached = 0
    for start in range(0, FLIPS, 1000):
        n = min(1000, FLIPS - start)
        total = np.zeros(n)
        for g in groups:
            total += (rng.integers(0, 2, size=(n, len(g))) * 2 - 1) @ g / len(g)
        reached += int((np.abs(total / len(groups)) >= observed - 1e-12).sum())
    return (1 + reached) / (1 + FLIPS)


def compare(base: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> dict[str, Any]:
    """Means, mean difference and paired p-values of each metric."""
    out: dict[str, Any] = {}
    for metric in METRICS:
        d = other[metric] - base[metric]
        t_p = float(stats.ttest_rel(other[metric], base[metric]).pvalue) if d.any() else 1.0
        out[metric] = {
            "base": float(base[metric].mean()),
            "prf": float(other[metric].mean()),
            "delta": float(d.mean()),
            "p_t": t_p,
            "p_rand": sign_flip_p([d]),
            "wins": int((d > 0).sum()),
            "losses": int((d < 0).sum()),
            "differences": d.tolist(),
        }
    return out


def tune(
    grid: list[dict[str, Any]],
    run: Callable[[dict[str, Any]], SearchResult],
    queries: Queries,
    doc_ids: Sequence[str],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The setting of best tuning nDCG@10 (first on ties) and every setting's figures."""
    scored = []
    for setting in grid:
        scored.append({**setting, **means(run(setting), queries, doc_ids)})
    best = max(range(len(grid)), key=lambda i: (scored[i]["ndcg@10"], -i))
    return grid[best], scored


def timed(search: Callable[[], SearchResult], n: int) -> tuple[SearchResult, float]:
    """A batch search and its milliseconds per query."""
    start = time.perf_counter()
    result = search()
    return result, (time.perf_counter() - start) * 1000 / n


def lexical_rows(corpus: list[dict], tune_q: Queries, report_q: Queries) -> dict[str, Any]:
    index = BM25Index.build(corpus)
    doc_ids = list(index.doc_ids)
    index.search(report_q.texts[:5], DEPTH)  # compile outside the timing

    def rm3(setting: dict[str, Any], queries: Queries) -> SearchResult:
        return RM3(index, corpus, **setting).search(queries.texts, DEPTH)

    best, grid = tune(RM3_GRID, lambda s: rm3(s, tune_q), tune_q, doc_ids)
    tune_base = means(index.search(tune_q.texts, DEPTH), tune_q, doc_ids)
    base, base_ms = timed(lambda: index.search(report_q.texts, DEPTH), len(report_q.texts))
    default, prf_ms = timed(lambda: rm3(RM3_GRID[0], report_q), len(report_q.texts))
    tuned = rm3(best, report_q)
    base_values = per_query(base, report_q, doc_ids)
    return {
        "default": {
            "setting": RM3_GRID[0],
            **compare(base_values, per_query(default, report_q, doc_ids)),
        },
        "tuned": {"setting": best, **compare(base_values, per_query(tuned, report_q, doc_ids))},
        "grid": grid,
        "tune_base": tune_base,
        "ms_per_query": {"base": base_ms, "prf": prf_ms},
    }


def dense_rows(
    corpus: list[dict], encoder: Encoder, tune_q: Queries, report_q: Queries
) -> dict[str, Any]:
    start = time.perf_counter()
    index = DenseIndex.build(corpus, encoder=encoder, embedding_cache=EmbeddingCache())
    build_s = time.perf_counter() - start
    doc_ids = list(index.doc_ids)
    tune_vectors = encoder.encode(tune_q.texts)
    report_vectors = encoder.encode(report_q.texts)

    def rocchio(setting: dict[str, Any], vectors: np.ndarray) -> SearchResult:
        return Rocchio(index, **setting).search(vectors, DEPTH)

    best, grid = tune(ROCCHIO_GRID, lambda s: rocchio(s, tune_vectors), tune_q, doc_ids)
    tune_base = means(index.search(tune_vectors, DEPTH), tune_q, doc_ids)
    n = len(report_q.texts)
    base, base_ms = timed(lambda: index.search(report_vectors, DEPTH), n)
    default, prf_ms = timed(lambda: rocchio(ROCCHIO_DEFAULTS, report_vectors), n)
    tuned = rocchio(best, report_vectors)
    base_values = per_query(base, report_q, doc_ids)
    return {
        "default": {
            "setting": ROCCHIO_DEFAULTS,
            **compare(base_values, per_query(default, report_q, doc_ids)),
        },
        "tuned": {"setting": best, **compare(base_values, per_query(tuned, report_q, doc_ids))},
        "grid": grid,
        "tune_base": tune_base,
        "ms_per_query": {"base": base_ms, "prf": prf_ms},
        "build_s": build_s,
    }


def markdown(title: str, rows: dict[str, dict[str, Any]], variant: str) -> str:
    """One table: a row per collection and the average, the variant's figures."""
    lines = [
        f"| {title} ({variant}) | setting | nDCG@10 base | +PRF | Δ | p (t / rand) "
        "| R@100 base | +PRF | Δ | p (t / rand) |",
        "|---" * 10 + "|",
    ]
    totals = {m: {"base": 0.0, "prf": 0.0} for m in METRICS}
    for name, row in rows.items():
        figures = row[variant]
        cells = [name, ", ".join(f"{k}={v}" for k, v in figures["setting"].items())]
        for metric in METRICS:
            f = figures[metric]
            totals[metric]["base"] += f["base"]
            totals[metric]["prf"] += f["prf"]
            cells += [
                f"{f['base']:.4f}",
                f"{f['prf']:.4f}",
                f"{f['delta']:+.4f}",
                f"{f['p_t']:.3f} / {f['p_rand']:.3f}",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    cells = ["**average**", ""]
    for metric in METRICS:
        base, prf = (totals[metric][k] / len(rows) for k in ("base", "prf"))
        groups = [np.array(row[variant][metric]["differences"]) for row in rows.values()]
        p_average = sign_flip_p(groups)
        cells += [f"{base:.4f}", f"{prf:.4f}", f"{prf - base:+.4f}", f"rand {p_average:.3f}"]
    lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET.parent)
    parser.add_argument("--seed", type=int, default=0, help="seed of the query halves")
    parser.add_argument(
        "--dense", default=None, help="collections to run dense + Rocchio on (default: all)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    args = parser.parse_args()
    folders = sorted(p for p in args.data.iterdir() if (p / "corpus.jsonl").is_file())
    if not folders:
        print(f"no collections under {args.data}", file=sys.stderr)
        return 2
    dense_names = {f.name for f in folders} if args.dense is None else set(args.dense.split(","))
    encoder = Encoder.load()
    report: dict[str, Any] = {"rm3": {}, "rocchio": {}, "splits": {}}
    for folder in folders:
        tune_q, report_q, how = splits(folder, args.seed)
        corpus = documents_with_text(load_beir(folder, "test"))
        report["splits"][folder.name] = how
        report["rm3"][folder.name] = lexical_rows(corpus, tune_q, report_q)
        print(f"{folder.name}: rm3 {report['rm3'][folder.name]['tuned']}", file=sys.stderr)
        if folder.name in dense_names:
            report["rocchio"][folder.name] = dense_rows(corpus, encoder, tune_q, report_q)
            print(
                f"{folder.name}: rocchio {report['rocchio'][folder.name]['tuned']}", file=sys.stderr
            )
    for name, how in report["splits"].items():
        print(f"- {name}: {how}")
    for method, title in (("rm3", "BM25 + RM3"), ("rocchio", "dense + Rocchio")):
        for variant in ("default", "tuned"):
            print()
            print(markdown(title, report[method], variant))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
