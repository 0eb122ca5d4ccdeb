"""``hybrid-engine index CORPUS OUT``: build the hybrid engine over a corpus and save it."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from hybrid_engine.checks import check_int, check_names
from hybrid_engine.cli import _sharded as sharded
from hybrid_engine.cli._corpus import read_documents
from hybrid_engine.cli._engine import LegOptions, build_engine
from hybrid_engine.cli._options import (
    add_quiet_option,
    add_ray_option,
    add_skip_empty_option,
    add_threads_option,
    add_variant_option,
)
from hybrid_engine.cli._replace import output_dir
from hybrid_engine.cli._values import multiple
from hybrid_engine.lexical.analysis import AnalyzerConfig
from hybrid_engine.lexical.languages import has_stopwords, language_name
from hybrid_engine.pipeline.legs import DEFAULT_RETRIEVERS, RETRIEVERS

BM25_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


def add_parser(subparsers: Any) -> None:
    """Add ``index`` to the ``hybrid-engine`` subparsers."""
    p = subparsers.add_parser(
        "index", help="build the hybrid engine (BM25 + dense by default) over a corpus and save it"
    )
    p.add_argument("corpus", help="corpus.jsonl[.gz] ({_id, title, text} per line) or its folder")
    p.add_argument(
        "output",
        help="index directory to write: a new or empty one (an existing index is replaced "
        "atomically with --force)",
    )
    p.add_argument(
        "--force",
        "--overwrite",
        action="store_true",
        help="replace the index at OUTPUT: the new one is built beside it and swapped in at "
        "once, so readers find the old or the new one (default: an existing OUTPUT is an error)",
    )
    add_skip_empty_option(p)
    p.add_argument(
        "--retrievers",
        default=",".join(DEFAULT_RETRIEVERS),
        help=f"comma-separated legs, from {list(RETRIEVERS)} (default: %(default)s; "
        "bm25 alone needs no model)",
    )
    p.add_argument(
        "--model",
        default=None,
        help="bi-encoder of the dense leg: a prepared folder or its name in the models folder, "
        "e.g. one `hybrid-engine train-encoder` made (default: all-MiniLM-L6-v2); the index "
        "records it, so load and search use it",
    )
    add_variant_option(p, "bi-encoder variant of the dense leg (default: %(default)s)")
    add_threads_option(p)
    add_quiet_option(p, "no progress bars or summary")
    p.add_argument(
        "--shards",
        type=int,
        default=None,
        metavar="N",
        help="build a sharded index of N shards on Ray (docs/scaling.md): documents routed by "
        "a hash of their id, each shard a live index built by its own actor; `add` and "
        "`delete` change it as one (default: one index)",
    )
    add_ray_option(p)
    bm25 = p.add_argument_group("BM25 leg (default: the engine's)")
    bm25.add_argument("--k1", type=float, default=None)
    bm25.add_argument("--b", type=float, default=None)
    bm25.add_argument("--method", default=None, choices=BM25_METHODS)
    bm25.add_argument(
        "--language",
        default=None,
        help="the documents' language: its Snowball stemmer and stopwords (a name or ISO 639-1 "
        "code: es, pt, fr, de, it, nl, sv, ru, ...; default: english)",
    )
    bm25.add_argument("--no-stopwords", action="store_true", help="keep stopwords")
    bm25.add_argument(
        "--stemmer", default=None, help="a Snowball stemmer apart from --language, or none"
    )
    bm25.add_argument("--keep-accents", action="store_true", help="do not strip diacritics")
    bm25.add_argument("--cjk", choices=("unigram", "bigram"), default=None)
    bm25.add_argument(
        "--positions",
        action="store_true",
        help='record term positions, for phrase queries: a search\'s "quoted phrase" is '
        "then required in its hits (costs disk and build time: docs/lexical.md)",
    )
    dense = p.add_argument_group("dense leg (default: the engine's)")
    dense.add_argument("--m", type=int, default=None, help="HNSW graph degree")
    dense.add_argument(
        "--ef-construction", type=int, default=None, help="HNSW build-time candidate list size"
    )
    dense.add_argument(
        "--quantization",
        choices=("none", "int8", "binary"),
        default=None,
        help="what the graph walk scores: float32 vectors (none), int8 or binary codes, the "
        "best candidates rescored with the float32 vectors",
    )
    dense.add_argument(
        "--oversample",
        type=multiple,
        default=None,
        help="candidates rescored per hit asked for (>= 1; default: the quantization's)",
    )
    p.set_defaults(func=run)


def parse_retrievers(spec: str) -> list[str]:
    """The legs of a comma-separated ``--retrievers`` value, e.g. ``"bm25,dense"``
    (``checks.check_names``)."""
    return check_names(spec, RETRIEVERS, "--retrievers", "legs")


def leg_options(args: argparse.Namespace) -> LegOptions:
    """The BM25 and dense build options given on the command line, by leg, named as in
    ``BM25Index.build`` and ``DenseIndex.build`` (options left out are absent)."""
    bm25: dict[str, Any] = {
        name: value
        for name, value in (("k1", args.k1), ("b", args.b), ("method", args.method))
        if value is not None
    }
    if args.positions:
        bm25["positions"] = True
    analysis = (args.language, args.no_stopwords, args.keep_accents, args.stemmer, args.cjk)
    if any(flag not in (None, False) for flag in analysis):
        defaults = AnalyzerConfig()
        language = language_name(args.language) if args.language is not None else None
        stemmer = args.stemmer or language or defaults.stemmer
        stopwords: bool | str = not args.no_stopwords
        if language is not None and stopwords and args.stemmer is not None:
            stopwords = language if has_stopwords(language) else False  # apart from the stemmer
        bm25["analyzer"] = AnalyzerConfig(
            stopwords=stopwords,
            stemmer=stemmer,
            strip_accents=not args.keep_accents,
            cjk=args.cjk or defaults.cjk,
        )
    given = (
        ("m", args.m),
        ("ef_construction", args.ef_construction),
        ("oversample", args.oversample),
    )
    dense: dict[str, Any] = {name: value for name, value in given if value is not None}
    if args.quantization is not None:
        dense["quantization"] = None if args.quantization == "none" else args.quantization
    return {leg: options for leg, options in (("bm25", bm25), ("dense", dense)) if options}


def run(args: argparse.Namespace) -> int:
    """Build and save the engine (the write lock is given back after); print a one-line
    summary unless ``--quiet``."""
    retrievers = parse_retrievers(args.retrievers)  # before reading: a typo fails at once
    options = leg_options(args)
    if args.shards is not None:
        return run_sharded(args, retrievers, options)
    corpus = read_documents(args.corpus, skip_empty=args.skip_empty)
    start = time.perf_counter()
    with output_dir(Path(args.output), force=args.force) as target:  # checked before the build
        with corpus.lines_named():  # a document the engine refuses, by its line
            engine = build_engine(
                corpus.documents,
                retrievers=retrievers,
                model=args.model,
                variant=args.variant,
                leg_options=options,
                num_threads=args.threads,
                show_progress=not args.quiet,
            )
        with engine:  # saving takes the directory's write lock; give it up when done
            engine.save(target)
    if not args.quiet:
        encoder = engine.encoder
        name = getattr(encoder, "name", "")
        model = f" ({name} {args.variant} bi-encoder)" if "dense" in engine.retrievers else ""
        print(
            f"indexed {len(engine)} documents{corpus.skipped_note()} with "
            f"{', '.join(engine.retrievers)}{model} in {time.perf_counter() - start:.2f}s -> "
            f"{args.output}"
        )
    return 0


def run_sharded(args: argparse.Namespace, retrievers: list[str], options: LegOptions) -> int:
    """``index --shards N``: build the sharded index into a new (or empty) directory."""
    n_shards = check_int("--shards", args.shards, 1)
    output = Path(args.output)
    if args.force:
        raise ValueError(
            "--force does not replace an index with a sharded one (--shards); remove the old "
            "index or choose another output"
        )
    if output.exists() and not (output.is_dir() and not any(output.iterdir())):
        raise FileExistsError(f"{output} exists and is not empty; choose another output")
    corpus = read_documents(args.corpus, skip_empty=args.skip_empty)
    start = time.perf_counter()
    with corpus.lines_named():
        count = sharded.build(
            corpus.documents,
            output,
            n_shards=n_shards,
            options=sharded.build_options(retrievers, options, args.model, args.variant),
            address=args.ray_address,
        )
    if not args.quiet:
        print(
            f"indexed {count} documents{corpus.skipped_note()} with {', '.join(retrievers)} "
            f"into {n_shards} shard(s) in {time.perf_counter() - start:.2f}s -> {args.output}"
        )
    return 0
