"""Test nDCG@10 and Recall@100 of a prepared bi-encoder (one ``train-encoder`` fine-tuned, or
another model ``models prepare-encoder`` prepared) against the default all-MiniLM-L6-v2, per
collection: the dense leg alone and the fused hybrid (BM25 + dense, the engine's default
fusion); and what each costs: encoding speed and index size.

For every collection given (default: SciFact, the in-domain test split of a model trained on
SciFact's training split, then Cranfield, CISI, MED and nfcorpus-partial, out of domain) the
script builds the default ``HybridIndex`` twice over the documents with text, once with the
base all-MiniLM-L6-v2 and once with the model (each in ``--variant``; corpus embeddings through
the default ``EmbeddingCache``, so re-runs encode nothing), searches every test query to depth
100 with the dense leg and with the engine, and scores the runs with pytrec_eval
(``evaluation.metrics``); the last column is the one-sided paired sign-flip p-value of the
nDCG@10 gain (``evaluation.significance``, as the gate's). The training time comes from the
model's training record, when it has one. With ``--speed N`` it also times each model
encoding the first N SciFact documents (no cache, ``--threads``), and gives the size on disk
per document of each SciFact index (``HybridIndex.save``)::

    PYTHONPATH=. python benchmarks/reports/encoder_report.py MODEL [--variant int8]
        [--collections scifact,med] [--speed 500] [--json report.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine import EmbeddingCache, Encoder, HybridIndex
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.corpus import document_text
from hybrid_engine.evaluation import load_beir
from hybrid_engine.evaluation.metrics import EvalResult, evaluate, run_from_results
from hybrid_engine.evaluation.runner import documents_with_text
from hybrid_engine.evaluation.significance import max_t_p_values
from hybrid_engine.models import RefusedModelWarning

COLLECTIONS = ("scifact", "cranfield", "cisi", "med", "nfcorpus-partial")
METRICS = ("ndcg@10", "recall@100")
DEPTH = 100


def _engine(dataset_dir: Path, encoder: Encoder, threads: int) -> HybridIndex:
    """The default engine over the test collection's documents with text."""
    docs = documents_with_text(load_beir(dataset_dir, "test"))
    return HybridIndex.build(
        docs, encoder=encoder, embedding_cache=EmbeddingCache(), num_threads=threads
    )


def _costs(dataset_dir: Path, encoder: Encoder, n: int, threads: int) -> dict[str, float]:
    """Documents per second encoding the first ``n`` documents (no cache), and bytes per
    document of the saved index over the whole collection."""
    docs = documents_with_text(load_beir(dataset_dir, "test"))
    texts = [document_text(doc, i)[0] for i, doc in enumerate(docs[:n])]
    start = time.perf_counter()
    encoder.encode_document(texts)
    seconds = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as folder:
        _engine(dataset_dir, encoder, threads).save(Path(folder) / "index")
        size = sum(f.stat().st_size for f in Path(folder).rglob("*") if f.is_file())
    return {"docs_per_s": len(texts) / seconds, "bytes_per_doc": size / len(docs)}


def _figures(dataset_dir: Path, encoder: Encoder, threads: int) -> dict[str, EvalResult]:
    """Test figures (means and per query) of the dense leg and of the fused hybrid with
    ``encoder``."""
    dataset = load_beir(dataset_dir, "test")
    engine = _engine(dataset_dir, encoder, threads)
    query_ids = list(dataset.queries)
    texts = [dataset.queries[q] for q in query_ids]
    doc_ids = list(engine.doc_ids)
    dense = engine.dense
    assert dense is not None
    runs = {
        "dense": dense.search(texts, DEPTH),
        "hybrid": engine.search(texts, DEPTH, num_threads=threads),
    }
    return {
        name: evaluate(
            run_from_results(r.ids, r.scores, query_ids, doc_ids),
            dataset.qrels,
            METRICS,
            per_query=True,
        )
        for name, r in runs.items()
    }


def _one_sided_p(base: EvalResult, tuned: EvalResult) -> float:
    """One-sided paired sign-flip p-value of the per-query nDCG@10 gain (as the gate's)."""
    ids = sorted(base.per_query)
    gains = [tuned.per_query[q]["ndcg@10"] - base.per_query[q]["ndcg@10"] for q in ids]
    return float(max_t_p_values(np.array(gains)[:, None])[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="prepared bi-encoder: a folder or its name")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET.parent)
    parser.add_argument("--collections", default=",".join(COLLECTIONS))
    parser.add_argument("--variant", default="int8", choices=("fp32", "int8"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    parser.add_argument(
        "--speed", type=int, default=0, metavar="N", help="time encoding N SciFact documents"
    )
    args = parser.parse_args(argv)

    with warnings.catch_warnings():
        warnings.simplefilter("always", RefusedModelWarning)  # report it, measure it anyway
        tuned = Encoder.load(args.model, variant=args.variant, num_threads=args.threads)
    base = Encoder.load(variant=args.variant, num_threads=args.threads)
    record: dict[str, Any] = tuned.info.manifest.get("training") or {}
    gate = record.get("validation", {})
    wall = record.get("wall_s", {})
    if record:
        print(
            f"{args.model} ({args.variant}): trained on {record.get('data', {}).get('dataset')} "
            f"{record.get('data', {}).get('split')}, {record.get('settings', {}).get('steps')} "
            f"steps, training {wall.get('train', float('nan')) / 60:.1f} min (data "
            f"{wall.get('data')} s, validation {wall.get('validation')} s); gate "
            f"{'accepted' if gate.get('accepted') else 'REFUSED'} (validation dense nDCG@10 "
            f"{gate.get('base', float('nan')):.4f} -> {gate.get('tuned', float('nan')):.4f}, "
            f"p={gate.get('p_value')})"
        )
    else:
        print(f"{tuned!r} against {base!r}")
    header = "| collection | leg | " + " | ".join(
        f"{m} base | {m} tuned | {m} gain" for m in METRICS
    )
    print(header + " | p (nDCG@10 gain > 0) |")
    print("|" + "---|" * (3 + 3 * len(METRICS)))
    report: dict[str, Any] = {"model": str(args.model), "variant": args.variant, "training": wall}
    for name in args.collections.split(","):
        folder = args.data / name
        before = _figures(folder, base, args.threads)
        after = _figures(folder, tuned, args.threads)
        report[name] = {}
        for leg in ("dense", "hybrid"):
            b, a = before[leg].mean, after[leg].mean
            cells = " | ".join(f"{b[m]:.4f} | {a[m]:.4f} | {a[m] - b[m]:+.4f}" for m in METRICS)
            p = _one_sided_p(before[leg], after[leg])
            report[name][leg] = {"base": b, "tuned": a, "p_ndcg_gain": p}
            print(f"| {name} | {leg} | {cells} | {p:.4f} |", flush=True)
    if args.speed:
        folder = args.data / COLLECTIONS[0]
        print(f"\n| model | documents/s ({args.speed} {folder.name}) | index bytes/doc |")
        print("|---|---|---|")
        for encoder in (base, tuned):
            costs = _costs(folder, encoder, args.speed, args.threads)
            report.setdefault("costs", {})[encoder.name] = costs
            print(
                f"| {encoder.name} {encoder.variant} | {costs['docs_per_s']:.1f} | "
                f"{costs['bytes_per_doc']:.0f} |",
                flush=True,
            )
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
