"""Test nDCG@10 of a trained reranker per collection: fused top 30 vs reranked vs blended.

For every collection given (default: the five under ``../shared/data/beir``) the script builds
the default hybrid (``runner.build_hybrid``), takes the fused top 30 of each test query, scores
them with a prepared cross-encoder (``CrossEncoder``, ONNX; the folder ``hybrid-engine
train-reranker`` prepared) and prints nDCG@10 of the fused order, the reranked order, and the
blend at the weight the validation gate chose (the manifest's training record); the best blend
on test is shown only for reference (chosen on test, it is not a result)::

    PYTHONPATH=. python benchmarks/reports/rerank_report.py PREPARED_FOLDER [--variant int8]
        [--max-length N] [--collections scifact,med] [--json report.json]

By default the model loads as its validation gate scored it (the recorded variant and
max_length), so the test figures are those of the validated configuration.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.corpus import document_text
from hybrid_engine.evaluation import load_beir
from hybrid_engine.evaluation.runner import build_hybrid, documents_with_text
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.training import evaluate_reranker

COLLECTIONS = ("scifact", "cranfield", "cisi", "med", "nfcorpus-partial")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path, help="prepared folder written by train-reranker")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET.parent)
    parser.add_argument("--collections", default=",".join(COLLECTIONS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--variant", default=None, choices=("fp32", "int8"), help="default: the validated one"
    )
    parser.add_argument(
        "--max-length", type=int, default=None, help="tokens per pair (default: the validated)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures as JSON")
    args = parser.parse_args(argv)

    cross_encoder = CrossEncoder.load(
        args.model, variant=args.variant, num_threads=args.threads, max_length=args.max_length
    )
    record = cross_encoder.training
    if record is None:
        parser.error(f"{args.model} has no training record; give a folder train-reranker prepared")
    gate = record["validation"]
    weight = gate["blend_weight"] if gate["mode"] == "blend" else None
    max_length = cross_encoder.max_length
    print(
        f"{args.model}: validation gate {'accepted' if gate['accepted'] else 'refused'} "
        f"(mode {gate['mode']}, blend weight {weight}), {cross_encoder.variant}, max_length "
        f"{max_length}"
    )
    print("| collection | queries | fused | reranked | blend (gate's weight) | best blend (test) |")
    print("|---|---|---|---|---|---|")
    figures = {}
    for name in args.collections.split(","):
        dataset = load_beir(args.data / name, "test")
        engine = build_hybrid(dataset, num_threads=args.threads)
        passages = [document_text(d, i)[0] for i, d in enumerate(documents_with_text(dataset))]
        verdict = evaluate_reranker(engine, dataset.queries, dataset.qrels, passages, cross_encoder)
        chosen = verdict.blended[f"{weight:g}"] if weight is not None else verdict.reranked
        best = max(verdict.blended.values())
        figures[name] = {
            "queries": verdict.queries,
            "fused": verdict.fused,
            "reranked": verdict.reranked,
            "blend_at_gate_weight": chosen,
            "blended": verdict.blended,
        }
        print(
            f"| {name} | {verdict.queries} | {verdict.fused:.4f} | {verdict.reranked:.4f} | "
            f"{chosen:.4f} | {best:.4f} |",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
