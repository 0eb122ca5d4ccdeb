"""``hybrid-engine index CORPUS OUT``: build a BM25 index from a corpus and save it."""

from __future__ import annotations

import argparse
import time
from typing import Any

from hybrid_engine.evaluation import load_corpus
from hybrid_engine.lexical.analysis import AnalyzerConfig
from hybrid_engine.lexical.bm25 import BM25Index


def add_parser(subparsers: Any) -> None:
    """Add ``index`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser("index", help="build a BM25 index from a corpus and save it")
    p.add_argument("corpus", help="corpus.jsonl[.gz] ({_id, title, text} per line) or its folder")
    p.add_argument("output", help="index directory to write (replaced atomically)")
    p.add_argument("--k1", type=float, default=0.9)
    p.add_argument("--b", type=float, default=0.4)
    p.add_argument(
        "--method", default="lucene", choices=("lucene", "robertson", "atire", "bm25l", "bm25+")
    )
    p.add_argument("--threads", type=int, default=None, help="analysis threads (default: all)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary")
    group = p.add_argument_group("analysis")
    group.add_argument("--no-stopwords", action="store_true", help="keep English stopwords")
    group.add_argument("--stemmer", choices=("english", "none"), default="english")
    group.add_argument("--keep-accents", action="store_true", help="do not strip diacritics")
    group.add_argument("--cjk", choices=("unigram", "bigram"), default="unigram")
    p.set_defaults(func=run)


def _analyzer(args: argparse.Namespace) -> AnalyzerConfig:
    return AnalyzerConfig(
        stopwords=not args.no_stopwords,
        stemmer=args.stemmer,
        strip_accents=not args.keep_accents,
        cjk=args.cjk,
    )


def run(args: argparse.Namespace) -> int:
    """Build and save the index; print a one-line summary unless ``--quiet``."""
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
