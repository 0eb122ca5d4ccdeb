"""The bi-encoder's optimisation loop: sentence-transformers' MultipleNegativesRankingLoss over
(query, positive, hard negative) batches.

Needs the ``export`` extra (PyTorch, sentence-transformers); imported lazily. Each query is
scored against every positive and hard negative of its batch (in-batch negatives plus the
mined ones) and the softmax cross-entropy of its own positive is minimised; AdamW with linear
warm-up and decay, gradients clipped at norm 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_engine.models.export.common import require
from hybrid_engine.models.export.encoder_source import sentence_transformer
from hybrid_engine.models.store import ModelInfo
from hybrid_engine.progress import progress_bar

Batch = tuple[list[str], list[str], list[str]]
"""Aligned (queries, positives, hard negatives) of one step."""


def require_encoder_training(module: str) -> Any:
    """Import ``module`` of the export extra, naming encoder training as what needs it."""
    return require(module, "training a bi-encoder")


@dataclass(frozen=True)
class EncoderSettings:
    """How the loop trains (``encoder_trainer.train_encoder`` documents each).

    Attributes
    ----------
    max_seq_length : int
        Tokens per text (query or passage) in training, and of the saved model.
    epochs : float
        Passes over the pairs; a fraction trains on that share of one pass.
    batch_size : int
        Pairs per step.
    lr : float
        AdamW peak learning rate.
    warmup : float
        Share of the steps with a rising learning rate.
    weight_decay : float
        AdamW weight decay.
    scale : float
        MultipleNegativesRankingLoss's cosine scale (its inverse temperature).
    seed : int
        Seeds PyTorch, the negatives and the batches.
    """

    max_seq_length: int = 256
    epochs: float = 1.0
    batch_size: int = 16
    lr: float = 2e-5
    warmup: float = 0.1
    weight_decay: float = 0.01
    scale: float = 20.0
    seed: int = 0

    def total_steps(self, batches_per_epoch: int) -> int:
        """Optimiser steps of the whole run (at least 1)."""
        return max(1, math.ceil(self.epochs * batches_per_epoch))


DEFAULT_SETTINGS = EncoderSettings()
"""The defaults of ``train-encoder``: SciFact's training split (about 740 pairs after the
validation queries are held out) in a few minutes on 2 cores."""


def load_sentence_transformer(source: Path, max_seq_length: int, base: ModelInfo) -> Any:
    """The sentence-transformers model in ``source`` on the CPU, truncating at
    ``max_seq_length`` tokens; a plain Hugging Face folder (no ``modules.json``) gets the
    pooling and normalisation ``base`` was prepared with."""
    sentence_transformers = require_encoder_training("sentence_transformers")
    if (source / "modules.json").is_file():
        model = sentence_transformers.SentenceTransformer(str(source), device="cpu")
    else:
        model = sentence_transformer(
            source, dim=base.dim, pooling=base.pooling, normalize=base.normalize
        )
    model.max_seq_length = max_seq_length
    return model


def fit_encoder(
    model: Any,
    epoch_batches: Callable[[int], Sequence[Batch]],
    settings: EncoderSettings,
    *,
    show_progress: bool,
) -> list[float]:
    """Train ``model`` in place; return the loss of every step.

    Parameters
    ----------
    model : sentence_transformers.SentenceTransformer
        The model trained.
    epoch_batches : callable
        ``epoch_batches(epoch)``: the batches of epoch ``epoch`` (0, 1...), each drawn afresh
        (its own negatives and order); the same count every epoch.
    settings : EncoderSettings
        Steps, learning rate, warm-up, decay and the loss's scale.
    show_progress : bool
        A tqdm bar of the steps on stderr.
    """
    torch = require_encoder_training("torch")
    transformers = require_encoder_training("transformers")
    losses_module = require_encoder_training("sentence_transformers.sentence_transformer.losses")
    loss_fn = losses_module.MultipleNegativesRankingLoss(model, scale=settings.scale)
    first = epoch_batches(0)
    total = settings.total_steps(len(first))
    decay = [p for n, p in model.named_parameters() if "bias" not in n and "LayerNorm" not in n]
    rest = [p for n, p in model.named_parameters() if "bias" in n or "LayerNorm" in n]
    optimizer = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": settings.weight_decay},
            {"params": rest, "weight_decay": 0.0},
        ],
        lr=settings.lr,
    )
    schedule = transformers.get_linear_schedule_with_warmup(
        optimizer, round(settings.warmup * total), total
    )
    tokenize = getattr(model, "preprocess", None) or model.tokenize  # renamed in 5.x
    model.train()
    losses: list[float] = []
    batches, epoch = first, 0
    with progress_bar(total=total, desc="training", unit="step", show=show_progress) as bar:
        while len(losses) < total:
            for queries, positives, negatives in batches:
                if len(losses) == total:
                    break
                features = [tokenize(texts) for texts in (queries, positives, negatives)]
                loss = loss_fn(features, None)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                schedule.step()
                optimizer.zero_grad()
                losses.append(float(loss.detach()))
                bar.update(1)
                bar.set_postfix(loss=f"{losses[-1]:.3f}")
            epoch += 1
            batches = epoch_batches(epoch) if len(losses) < total else batches
    model.eval()
    return losses
