"""The training record, ``training.json``: what was trained on, how, and the gate's verdict.

Written beside the Hugging Face model and copied into the prepared model's manifest under
``"training"``, where ``rerank.reranker_verdict`` reads its ``"validation"`` entry.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine._version import __version__
from hybrid_engine.pipeline.rerank import RERANK_DEPTH
from hybrid_engine.training.examples import TrainingSet
from hybrid_engine.training.loop import LoopSettings
from hybrid_engine.training.model import BASE_PACKAGE

TRAINING_RECORD = "training.json"
"""The record written beside the model (copied into the prepared model's manifest)."""


def versions(packages: Sequence[str] = ("torch", "transformers", BASE_PACKAGE)) -> dict[str, str]:
    """The installed versions of hybrid_engine and ``packages`` (a record's ``"versions"``)."""
    return {"hybrid_engine": __version__} | {n: importlib.metadata.version(n) for n in packages}


def data_record(
    dataset_dir: str | os.PathLike[str], supervision: Sequence[str], examples: TrainingSet
) -> dict[str, Any]:
    """What a model was trained on (a record's ``"data"``, before the negatives' fields):
    the dataset, split, supervision, query and pair counts, documents."""
    kinds = [p.kind for p in examples.pairs]
    return {
        "dataset": examples.dataset.name,
        "dataset_dir": str(Path(dataset_dir).resolve()),
        "split": examples.dataset.split,
        "supervision": list(supervision),
        "training_queries": len(examples.train_ids),
        "validation_queries": len(examples.validation_ids),
        "pairs": {kind: kinds.count(kind) for kind in sorted(set(kinds))},
        "documents": len(examples.documents),
    }


def training_record(
    *,
    source: str | os.PathLike[str] | None,
    dataset_dir: str | os.PathLike[str],
    supervision: Sequence[str],
    examples: TrainingSet,
    settings: LoopSettings,
    extra_settings: dict[str, Any],
    losses: Sequence[float],
    wall_s: dict[str, float],
) -> dict[str, Any]:
    """The record of one training run, as JSON-ready values, before validation
    (``with_validation`` completes it).

    Parameters
    ----------
    source : path, optional
        The initial Hugging Face folder given (None: the shipped base model).
    dataset_dir, supervision
        As given to ``trainer.train_reranker``.
    examples : TrainingSet
        What was trained on.
    settings : LoopSettings
        How.
    extra_settings : dict
        The other settings recorded (threads, self-pair cap, validation fraction).
    losses : sequence of float
        The loss of every step.
    wall_s : dict of str to float
        Seconds per phase.
    """
    return {
        "base_model": {"package": BASE_PACKAGE, "path": str(source) if source else None},
        "data": {
            **data_record(dataset_dir, supervision, examples),
            "negatives": settings.negatives,
            "negative_mode": settings.negative_mode,
            "negative_pool": f"hybrid top {RERANK_DEPTH} minus judged positives",
        },
        "settings": {
            "loss": "listwise softmax cross-entropy, 1 positive + negatives",
            "max_length": settings.max_length,
            "epochs": settings.epochs,
            "steps": settings.total_steps(len(examples.pairs)),
            "batch_size": settings.batch_size,
            "lr_body": settings.lr_body,
            "lr_head": settings.lr_head,
            "warmup": settings.warmup,
            "weight_decay": settings.weight_decay,
            **extra_settings,
        },
        "seed": settings.seed,
        "loss": {
            "first_50": float(np.mean(losses[:50])),
            "last_50": float(np.mean(losses[-50:])),
        },
        "versions": versions(),
        "wall_s": {phase: round(seconds, 1) for phase, seconds in wall_s.items()},
    }


def with_validation(
    record: dict[str, Any], validation: dict[str, Any], seconds: float
) -> dict[str, Any]:
    """``record`` completed with the gate's verdict (``GateVerdict.to_dict``) and its time."""
    wall_s = {**record["wall_s"], "validation": round(seconds, 1)}
    return {
        **record,
        "wall_s": wall_s,
        "validation": {"rerank_depth": RERANK_DEPTH, **validation},
    }


def write_record(record: dict[str, Any], output: Path) -> None:
    """Write ``record`` as ``output / TRAINING_RECORD``."""
    (output / TRAINING_RECORD).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
