"""The int8 bi-encoder against the fp32 one: nDCG@10 of dense alone and of the default hybrid,
per collection, with a paired test, plus encoding throughput and how far the vectors move.

For every BEIR-layout collection under ``--data`` (default ``../shared/data/beir``) the script
builds the default hybrid (``HybridIndex.build``: BM25 and dense over the documents with text)
twice, once with the fp32 all-MiniLM-L6-v2 and once with its int8 variant (documents and
queries both through that variant; corpus embeddings through an ``EmbeddingCache`` under
``--cache``), and scores on the test qrels:

- ``dense``: the dense leg alone (its top ``--depth``), fp32 and int8;
- ``hybrid``: ``HybridIndex.search`` with its defaults (fusion method, top ``--depth`` of each
  leg), fp32 and int8;

each with the mean per-query nDCG@10 difference int8 - fp32 and the two-sided p-value of the
paired randomization (sign-flip) test of ``fusion_significance.py`` (``--rounds``, seeded).
Per collection it also gives the largest absolute difference of any coordinate, and the least
and mean cosine, between the int8 and fp32 vector of each document, and it times the corpus
encoding of each variant (texts actually encoded, that is missing from the cache: a rerun on
a warm cache measures nothing; use a fresh ``--cache`` to time again)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 PYTHONPATH=. \
        PYTHONPATH=. python benchmarks/reports/int8_report.py --threads 1 [--json int8.json]

Nothing is tuned: every setting is the library default, only the test qrels are read.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from fusion_significance import randomization_p  # the paired test of the fusion report
from tqdm import tqdm

from hybrid_engine import EmbeddingCache, Encoder, HybridIndex, SearchResult
from hybrid_engine.evaluation import Dataset, evaluate, load_beir, run_from_results

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "beir"
DEFAULT_CACHE = Path("/tmp/int8-cache")
VARIANTS = ("fp32", "int8")
CONFIGURATIONS = ("dense", "hybrid")
ALPHA = 0.05


class TimedEncoder:
    """An ``Encoder`` that adds up the texts it encodes and the seconds it takes (a
    ``TextEncoder``: what ``DenseIndex`` and ``EmbeddingCache`` call)."""

    def __init__(self, encoder: Encoder) -> None:
        self._encoder = encoder
        self.texts = 0
        self.seconds = 0.0

    @property
    def dim(self) -> int:
        return self._encoder.dim

    @property
    def model_hash(self) -> str:
        return self._encoder.model_hash

    def encode(
        self, texts: Sequence[str], *, batch_size: int = 32, show_progress: bool = False
    ) -> np.ndarray:
        start = time.perf_counter()
        vectors = self._encoder.encode(texts, batch_size=batch_size, show_progress=show_progress)
        self.seconds += time.perf_counter() - start
        self.texts += len(texts)
        return vectors


def documents_with_text(dataset: Dataset) -> list[dict[str, str]]:
    """The corpus without documents whose title and text are blank (Cranfield has two): the
    encoder refuses them, and the evaluation harness leaves them out the same way."""
    return [doc for doc in dataset.corpus if (doc.get("title", "") + doc["text"]).strip()]


def per_query_ndcg10(dataset: Dataset, result: SearchResult, doc_ids: list[str]) -> np.ndarray:
    """nDCG@10 of every query with a relevant document (0 for one the run misses), in qrels
    order."""
    run = run_from_results(result.ids, result.scores, list(dataset.queries), doc_ids)
    scored = evaluate(run, dataset.qrels, ["ndcg@10"], per_query=True).per_query
    return np.array([row["ndcg@10"] for row in scored.values()])


def vector_agreement(fp32: np.ndarray, int8: np.ndarray) -> dict[str, float]:
    """Largest absolute coordinate difference, least and mean cosine, row by row."""
    cosine = (fp32 * int8).sum(axis=1) / (
        np.linalg.norm(fp32, axis=1) * np.linalg.norm(int8, axis=1)
    )
    return {
        "max_abs_diff": float(np.abs(fp32 - int8).max()),
        "min_cosine": float(cosine.min()),
        "mean_cosine": float(cosine.mean()),
    }


def collection_report(
    folder: Path,
    encoders: dict[str, TimedEncoder],
    cache: EmbeddingCache,
    depth: int,
    rounds: int,
    threads: int | None,
) -> dict[str, Any]:
    """nDCG@10 per configuration and variant, the paired test of each configuration, the
    encoding cost of each variant and the vectors' agreement on one collection."""
    dataset = load_beir(folder)
    corpus = documents_with_text(dataset)
    queries = list(dataset.queries.values())
    per_query: dict[str, dict[str, np.ndarray]] = {c: {} for c in CONFIGURATIONS}
    vectors: dict[str, np.ndarray] = {}
    encoding: dict[str, dict[str, float]] = {}
    for variant in VARIANTS:
        encoder = encoders[variant]
        encoder.texts, encoder.seconds = 0, 0.0
        engine = HybridIndex.build(
            corpus,
            encoder=encoder,
            embedding_cache=cache,
            num_threads=threads,
            show_progress=True,
        )
        encoding[variant] = {"documents": encoder.texts, "seconds": encoder.seconds}
        assert engine.dense is not None
        doc_ids = list(engine.doc_ids)
        vectors[variant] = np.array(engine.dense.vectors)
        dense = engine.dense.search(queries, depth, num_threads=threads)
        hybrid = engine.search(queries, 10, depth=depth, num_threads=threads)
        per_query["dense"][variant] = per_query_ndcg10(dataset, dense, doc_ids)
        per_query["hybrid"][variant] = per_query_ndcg10(dataset, hybrid, doc_ids)
    report: dict[str, Any] = {
        "documents": len(corpus),
        "queries": len(per_query["dense"]["fp32"]),
        "encoding": encoding,
        "vectors": vector_agreement(vectors["fp32"], vectors["int8"]),
    }
    for configuration, scores in per_query.items():
        fp32, int8 = scores["fp32"], scores["int8"]
        report[configuration] = {
            "fp32": float(fp32.mean()),
            "int8": float(int8.mean()),
            "difference": float((int8 - fp32).mean()),
            "p": randomization_p(int8, fp32, rounds),
            "queries_better": int((int8 > fp32).sum()),
            "queries_worse": int((int8 < fp32).sum()),
        }
    return report


def worse(figures: dict[str, float]) -> bool:
    """Whether int8 is significantly worse: lower mean with p below ``ALPHA``."""
    return figures["difference"] < 0 and figures["p"] < ALPHA


def markdown_quality(reports: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| collection | queries | dense fp32 | dense int8 | Δ dense | p dense "
        "| hybrid fp32 | hybrid int8 | Δ hybrid | p hybrid |",
        "|---" * 10 + "|",
    ]
    for name, report in reports.items():
        cells = [name, str(report["queries"])]
        for configuration in CONFIGURATIONS:
            figures = report[configuration]
            mark = " (worse)" if worse(figures) else ""
            cells += [
                f"{figures['fp32']:.4f}",
                f"{figures['int8']:.4f}",
                f"{figures['difference']:+.4f}",
                f"{figures['p']:.3f}{mark}",
            ]
        lines.append("| " + " | ".join(cells) + " |")
    means = ["average", ""]
    for configuration in CONFIGURATIONS:
        for key in ("fp32", "int8", "difference"):
            value = float(np.mean([r[configuration][key] for r in reports.values()]))
            means.append(f"{value:+.4f}" if key == "difference" else f"{value:.4f}")
        means.append("")
    lines.append("| " + " | ".join(means) + " |")
    return "\n".join(lines)


def markdown_vectors(reports: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| collection | documents | max abs diff | min cosine | mean cosine |",
        "|---" * 5 + "|",
    ]
    for name, report in reports.items():
        figures = report["vectors"]
        lines.append(
            f"| {name} | {report['documents']} | {figures['max_abs_diff']:.4f} | "
            f"{figures['min_cosine']:.4f} | {figures['mean_cosine']:.4f} |"
        )
    return "\n".join(lines)


def throughput(reports: dict[str, dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Documents encoded per second by each variant, over every collection it encoded."""
    out: dict[str, dict[str, float | None]] = {}
    for variant in VARIANTS:
        documents = sum(r["encoding"][variant]["documents"] for r in reports.values())
        seconds = sum(r["encoding"][variant]["seconds"] for r in reports.values())
        out[variant] = {
            "documents": documents,
            "seconds": seconds,
            "docs_per_s": documents / seconds if documents else None,
        }
    return out


def markdown_throughput(figures: dict[str, dict[str, float | None]], threads: int | None) -> str:
    lines = [
        f"| variant | documents encoded | seconds | docs/s (num_threads={threads}) |",
        "|---" * 4 + "|",
    ]
    for variant, row in figures.items():
        rate = row["docs_per_s"]
        shown = f"{rate:.1f}" if rate is not None else "cached (use a fresh --cache to time)"
        lines.append(f"| {variant} | {row['documents']} | {row['seconds']:.1f} | {shown} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="folder of collections")
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help=f"embedding cache (default {DEFAULT_CACHE})",
    )
    parser.add_argument("--depth", type=int, default=100, help="hits per leg (default 100)")
    parser.add_argument("--rounds", type=int, default=10_000, help="sign flips (default 10,000)")
    parser.add_argument("--threads", type=int, default=1, help="threads everywhere (default 1)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args()
    folders = sorted(p for p in args.data.iterdir() if (p / "corpus.jsonl").is_file())
    if not folders:
        print(f"no collections under {args.data}", file=sys.stderr)
        return 2
    encoders = {
        variant: TimedEncoder(Encoder.load(variant=variant, num_threads=args.threads))
        for variant in VARIANTS
    }
    cache = EmbeddingCache(args.cache)
    reports: dict[str, dict[str, Any]] = {}
    for folder in tqdm(folders, desc="collections", unit="collection"):
        reports[folder.name] = collection_report(
            folder, encoders, cache, args.depth, args.rounds, args.threads
        )
        tqdm.write(f"{folder.name}: {json.dumps(reports[folder.name])}", file=sys.stderr)
    speed = throughput(reports)
    never_worse = not any(worse(r[c]) for r in reports.values() for c in CONFIGURATIONS)
    print(markdown_quality(reports))
    print()
    print(markdown_vectors(reports))
    print()
    print(markdown_throughput(speed, args.threads))
    print()
    verdict = "never" if never_worse else "somewhere"
    print(f"int8 is {verdict} significantly worse than fp32 (p < {ALPHA}, two-sided).")
    if args.json:
        report = {
            "settings": {
                "depth": args.depth,
                "rounds": args.rounds,
                "threads": args.threads,
                "alpha": ALPHA,
                "model_hash": {v: e.model_hash for v, e in encoders.items()},
            },
            "collections": reports,
            "throughput": speed,
            "never_significantly_worse": never_worse,
        }
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
