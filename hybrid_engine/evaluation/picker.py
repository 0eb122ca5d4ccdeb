"""``pick``: measure candidate stacks on a collection's judged queries and recommend the best
one within a latency budget, or, without judged queries, recommend one by rule."""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.evaluation.corpus_stats import corpus_statistics
from hybrid_engine.evaluation.datasets import Dataset, available_splits, load_beir, load_corpus
from hybrid_engine.evaluation.pick_report import (
    ALPHA,
    QUALITY,
    RECALL,
    PickReport,
    StackFigures,
    choose,
    simplest_supported,
)
from hybrid_engine.evaluation.pick_rules import rule_report
from hybrid_engine.evaluation.runner import (
    BuildOptions,
    build_hybrid,
    documents_with_text,
    hybrid_searcher,
    load_reranker,
)
from hybrid_engine.evaluation.scoring import Searcher, evaluate_searcher
from hybrid_engine.lexical.index import BM25Index
from hybrid_engine.pipeline.fusion import METHODS
from hybrid_engine.pipeline.rerank import RERANK_DEPTH
from hybrid_engine.pipeline.stack import Stack
from hybrid_engine.progress import progress_bar

CANDIDATES = ("bm25", "dense", "splade", "hybrid", "hybrid3", "rerank")
"""The candidate kinds of ``pick``, named as ``hybrid-engine eval``'s retrievers; ``rerank``
is tried only with a reranker."""
FUSIONS = ("dbsf", "zscore", "minmax", "combmnz", "rrf")
"""The fusion methods tried for ``hybrid``: every one of ``fusion.METHODS`` but CombSUM, which
ranks exactly as min-max (the same min-max values; its weights are not scaled to sum to 1,
which scales every score by one factor). ``hybrid3`` and ``rerank`` use the best of them for
``hybrid``."""
_LEGS = {"bm25": ("bm25",), "dense": ("dense",), "splade": ("splade",)}


def pick(
    dataset: str | os.PathLike[str],
    *,
    budget_ms: float = 100.0,
    split: str = "train",
    candidates: Sequence[str] | None = None,
    reranker: str | os.PathLike[str] | None = None,
    rerank_variant: str = "int8",
    rerank_max_length: int | None = None,
    rules: bool = False,
    fusions: Sequence[str] = FUSIONS,
    num_threads: int | None = None,
    show_progress: bool = False,
) -> PickReport:
    """Recommend a stack for a BEIR-layout collection under a p95 latency budget.

    With judged queries (``qrels/<split>.tsv``) each candidate is built (each leg once,
    shared by every stack that uses it), scored on them (nDCG@10 and Recall@100) and timed
    one query per call from its text on this machine (p50/p95); the recommendation is
    ``pick_report.choose``'s: the best nDCG@10 whose p95 is within ``budget_ms``, else the
    fastest; and a stack of fewer model stages that the best does not beat by more than
    chance on these queries is preferred to it (``pick_report.simplest_supported``).
    Without them (no such qrels file, or ``rules``) the stack follows from corpus statistics
    by rule (``pick_rules.rule_report``), and the report says so (``basis="rule"``).

    Parameters
    ----------
    dataset : str or path-like
        A BEIR-layout folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``), or
        for the rules only, a corpus file or a folder without qrels.
    budget_ms : float
        p95 milliseconds per query allowed, > 0.
    split : str
        The judged queries to measure on: the user's own (``"train"``, ``"dev"``), never
        ``"test"``.
    candidates : sequence of str, optional
        Kinds from ``CANDIDATES`` to try; None: all (``rerank`` only with ``reranker``).
    reranker : str or path-like, optional
        The cross-encoder of the ``rerank`` candidate (a prepared folder or a name), as
        ``hybrid-engine eval --reranker``; with ``rerank_variant`` and ``rerank_max_length``
        (tokens per pair; None: the validated or the model's) as ``--rerank-variant`` and
        ``--rerank-max-length``.
    rules : bool
        Recommend by rule even if judged queries exist.
    fusions : sequence of str
        Fusion methods tried for ``hybrid``.
    num_threads : int, optional
        Threads of every stage and model (all cores when None).
    show_progress : bool
        Progress bars while indexing and measuring.

    Returns
    -------
    PickReport

    Raises
    ------
    ValueError
        ``split="test"`` (the message says which split to use), a budget <= 0, an unknown
        candidate or fusion method, ``rerank`` asked for without a reranker.
    DatasetError
        A missing or malformed dataset file.
    """
    if split == "test":
        raise ValueError(
            "pick never measures on the test split: the stack it picks would be fitted to the "
            "queries that should judge it. Judge queries of your own in qrels/train.tsv (or "
            "dev.tsv) and give --split train, then report test with `hybrid-engine eval "
            "--split test`"
        )
    if not budget_ms > 0:
        raise ValueError(f"budget_ms must be > 0, got {budget_ms!r}")
    kinds = _candidate_kinds(candidates, reranker is not None)
    unknown_fusions = [f for f in fusions if f not in METHODS]
    if unknown_fusions or not fusions:
        raise ValueError(f"unknown fusion method(s) {unknown_fusions or fusions}")
    path = Path(dataset)
    splits = available_splits(path) if path.is_dir() else []
    if rules or split not in splits:
        stats = corpus_statistics(load_corpus(path))
        report = rule_report(
            _collection_name(path), stats, budget_ms=budget_ms, reranker=reranker is not None
        )
        if rules:
            return report
        missing = f"no judged {split} queries (qrels/{split}.tsv); qrels splits: {splits or 'none'}"
        return replace(report, notes=(missing, *report.notes))
    options = BuildOptions(
        num_threads=num_threads,
        show_progress=show_progress,
        reranker=reranker,
        rerank_variant=rerank_variant,
        rerank_max_length=rerank_max_length,
    )
    if "rerank" in kinds:
        load_reranker(options)  # a missing or wrong model fails before any indexing
    data = load_beir(path, split)
    figures = _measure(data, kinds, fusions, options)
    best, within = choose(figures, budget_ms)
    if within:
        top = best
        best, p_value = simplest_supported(top, figures, budget_ms)
        reason = (
            f"the best {QUALITY} ({best.ndcg_at_10:.4f}) with p95 {best.p95_ms:.1f} ms "
            f"within {budget_ms:g} ms"
        )
        if p_value is not None:
            reason = (
                f"{QUALITY} {best.ndcg_at_10:.4f} with p95 {best.p95_ms:.1f} ms within "
                f"{budget_ms:g} ms: {top.name}'s {top.ndcg_at_10:.4f} costs more model stages "
                f"for a gain these queries do not support (paired sign-flip p = {p_value:.3f} "
                f">= {ALPHA})"
            )
    else:
        reason = (
            f"NO candidate is within {budget_ms:g} ms p95: the fastest, {best.p95_ms:.1f} ms "
            f"({QUALITY} {best.ndcg_at_10:.4f})"
        )
    return PickReport(
        dataset=data.name,
        basis="measured",
        name=best.name,
        stack=best.stack,
        budget_ms=budget_ms,
        reason=reason,
        split=split,
        n_queries=len(data.queries),
        within_budget=within,
        candidates=tuple(figures),
        eval_command=eval_command(path, split, best, num_threads),
    )


def eval_command(dataset: Path, split: str, figures: StackFigures, num_threads: int | None) -> str:
    """The ``hybrid-engine eval`` command line that scores ``figures``' configuration on
    ``split`` (its nDCG@10 and Recall@100 are pick's; its latency is timed anew)."""
    words = ["hybrid-engine", "eval", os.fspath(dataset), "--split", split, *figures.eval_args]
    if num_threads is not None:
        words += ["--threads", str(num_threads)]
    return shlex.join(words)


def _collection_name(path: Path) -> str:
    """``scifact`` of ``.../scifact`` and of ``.../scifact/corpus.jsonl.gz``; a corpus file of
    another name gives its name without suffixes."""
    if path.is_dir():
        return path.name
    stem = path.name.split(".")[0]
    return path.parent.name if stem == "corpus" else stem


def _candidate_kinds(candidates: Sequence[str] | None, reranker: bool) -> list[str]:
    if candidates is None:
        return [kind for kind in CANDIDATES if kind != "rerank" or reranker]
    unknown = [kind for kind in candidates if kind not in CANDIDATES]
    if unknown or not candidates:
        raise ValueError(
            f"unknown candidate(s) {unknown or list(candidates)}; choose from {list(CANDIDATES)}"
        )
    return [kind for kind in CANDIDATES if kind in candidates]


class _Plan(NamedTuple):
    """A candidate ready to measure: its name, stack, eval options, search and doc ids."""

    name: str
    stack: Stack
    eval_args: tuple[str, ...]
    search: Searcher
    doc_ids: Sequence[str]


def _measure(
    dataset: Dataset, kinds: list[str], fusions: Sequence[str], options: BuildOptions
) -> list[StackFigures]:
    """Build the legs ``kinds`` need once, as ``hybrid-engine eval`` builds them, and score
    and time each candidate over them: the single legs, ``hybrid`` with each of ``fusions``,
    then ``hybrid3`` and ``rerank`` with the best of those methods."""
    threads = options.num_threads
    fused = bool({"hybrid", "hybrid3", "rerank"} & set(kinds))
    legs = {kind for kind in kinds if kind in _LEGS}
    if fused:
        legs |= {"bm25", "dense"}
    if "hybrid3" in kinds:
        legs.add("splade")
    engine = build_hybrid(
        dataset, threads, options.show_progress, [leg for leg in _LEGS if leg in legs]
    )
    pair = engine if engine.splade is None else _bm25_dense(dataset, engine)
    singles = [
        _Plan(
            kind,
            Stack(_LEGS[kind]),
            ("--retriever", kind),
            *_single_leg(dataset, engine, kind, threads),
        )
        for kind in kinds
        if kind in _LEGS
    ]
    hybrids = [
        _Plan(
            f"hybrid-{fusion}",
            Stack(("bm25", "dense"), fusion),
            ("--retriever", "hybrid", "--fusion", fusion),
            hybrid_searcher(pair, fusion, rerank=False, num_threads=threads),
            engine.doc_ids,
        )
        for fusion in (fusions if fused else ())
    ]
    total = len(singles) + len(hybrids) + ("hybrid3" in kinds) + ("rerank" in kinds)
    with progress_bar(
        total=total, desc="measuring stacks", unit="stack", show=options.show_progress
    ) as bar:

        def measure(plans: list[_Plan]) -> list[StackFigures]:
            measured = []
            for plan in plans:
                measured.append(_figures(dataset, plan))
                bar.update(1)
            return measured

        figures = measure(singles)
        hybrid_figures = measure(hybrids)
        if "hybrid" in kinds:
            figures += hybrid_figures
        if hybrid_figures:
            best = max(hybrid_figures, key=lambda f: f.ndcg_at_10).stack.fusion
            figures += measure(_best_fusion_plans(engine, pair, best, kinds, options))
    return figures


def _best_fusion_plans(
    engine: HybridIndex, pair: HybridIndex, fusion: str, kinds: list[str], options: BuildOptions
) -> list[_Plan]:
    """``hybrid3`` over ``engine`` and ``rerank`` over ``pair`` (BM25 + dense) with
    ``fusion``, those of them ``kinds`` names."""
    threads = options.num_threads
    plans = []
    if "hybrid3" in kinds:
        plans.append(
            _Plan(
                f"hybrid3-{fusion}",
                Stack(("bm25", "dense", "splade"), fusion),
                ("--retriever", "hybrid3", "--fusion", fusion),
                hybrid_searcher(engine, fusion, rerank=False, num_threads=threads),
                engine.doc_ids,
            )
        )
    if "rerank" in kinds:
        args: tuple[str, ...] = (
            "--retriever", "rerank", "--fusion", fusion,
            "--reranker", os.fspath(options.reranker or ""),
            "--rerank-variant", options.rerank_variant or "int8",
        )  # fmt: skip
        if options.rerank_max_length is not None:
            args += ("--rerank-max-length", str(options.rerank_max_length))
        reranking = pair.with_reranker(load_reranker(options))
        plans.append(
            _Plan(
                f"rerank-{fusion}",
                Stack(("bm25", "dense"), fusion, rerank=RERANK_DEPTH),
                args,
                hybrid_searcher(reranking, fusion, rerank=True, num_threads=threads),
                engine.doc_ids,
            )
        )
    return plans


def _bm25_dense(dataset: Dataset, engine: HybridIndex) -> HybridIndex:
    """An engine of ``engine``'s BM25 and dense legs (shared, not rebuilt) over the same
    documents. Its legs number documents by position, so the documents are given without
    ids: its results are positions into ``engine.doc_ids``."""
    corpus = [
        {"title": doc.get("title", ""), "text": doc.get("text", "")}
        for doc in documents_with_text(dataset)
    ]
    return HybridIndex.from_legs(corpus, bm25=engine.bm25, dense=engine.dense)


def _single_leg(
    dataset: Dataset, engine: HybridIndex, kind: str, threads: int | None
) -> tuple[Searcher, Sequence[str]]:
    """The leg ``kind`` of ``engine`` searched alone, as ``hybrid-engine eval --retriever
    kind`` searches it. BM25 there indexes every document, the blank ones too, so when the
    corpus has blank documents its BM25 is built apart (on the same documents as eval's)."""
    if kind == "bm25":
        leg = engine.bm25
        if leg is None or len(dataset.corpus) != len(engine):
            apart = BM25Index.build(dataset.corpus, num_threads=threads)
            return (lambda q, k: apart.search(q, k, num_threads=threads)), apart.doc_ids
        return (lambda q, k: leg.search(q, k, num_threads=threads)), engine.doc_ids
    if kind == "dense":
        dense = engine.dense
        assert dense is not None  # built: the kind asked for its leg
        return (lambda q, k: dense.search(q, k)), engine.doc_ids
    splade = engine.splade
    assert splade is not None
    return (lambda q, k: splade.search(q, k, num_threads=threads)), engine.doc_ids


def _figures(dataset: Dataset, plan: _Plan) -> StackFigures:
    """``plan``'s search scored and timed as ``hybrid-engine eval`` scores and times it."""
    report = evaluate_searcher(dataset, plan.search, plan.doc_ids)
    p50, p95 = report.latency_ms["total"]
    per_query = tuple(report.per_query[q][QUALITY] for q in sorted(report.per_query))
    return StackFigures(
        name=plan.name,
        stack=plan.stack,
        ndcg_at_10=report.metrics[QUALITY],
        recall_at_100=report.metrics[RECALL],
        p50_ms=p50,
        p95_ms=p95,
        eval_args=plan.eval_args,
        per_query=per_query,
    )
