"""The optimisation loop: listwise softmax loss over groups of one positive and its negatives.

Each step takes ``batch_size`` groups (``negatives.listwise_groups``) and minimises the softmax
cross-entropy of the positive; the head learns at ``lr_head``, the body at ``lr_body``, both
with linear warm-up and decay (AdamW, gradients clipped at norm 1). With a teacher (a stronger
cross-encoder, for a shallower student) the loss adds the KL divergence of the student's
distribution over each group from the teacher's (listwise distillation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from hybrid_engine.progress import progress_bar
from hybrid_engine.training.examples import TrainingSet
from hybrid_engine.training.model import require_training, tokenize_pairs
from hybrid_engine.training.negatives import listwise_groups

BODY_PREFIXES = ("bert.embeddings", "bert.encoder")
"""Parameters of the pretrained body (``lr_body``); the rest, pooler and classifier, are the
head (``lr_head``)."""


@dataclass(frozen=True)
class LoopSettings:
    """What the loop is told (``trainer.train_reranker`` documents each).

    Attributes
    ----------
    negatives : int
        Negatives per positive in each group.
    negative_mode : str
        ``"hard"``, ``"random"`` or ``"mix"`` (``data.draw_negatives``).
    max_length : int
        Tokens per pair.
    epochs : float
        Passes over the training pairs.
    batch_size : int
        Groups per step.
    lr_body, lr_head : float
        AdamW learning rates of the body and the head.
    warmup : float
        Share of the steps with rising learning rates.
    weight_decay : float
        AdamW weight decay.
    seed : int
        Seeds the order of the pairs and the negatives drawn.
    """

    negatives: int
    negative_mode: str
    max_length: int
    epochs: float
    batch_size: int
    lr_body: float
    lr_head: float
    warmup: float
    weight_decay: float
    seed: int

    def total_steps(self, n_pairs: int) -> int:
        """Optimiser steps for ``n_pairs`` pairs: ``epochs`` passes of ``batch_size`` groups
        (at least one step)."""
        steps_per_epoch = -(-n_pairs // self.batch_size)
        return max(1, round(steps_per_epoch * self.epochs))


def listwise_loss(logits: Any) -> Any:
    """Softmax cross-entropy of column 0 (the positive) over each row of ``logits``
    (shape ``(groups, 1 + negatives)``)."""
    torch = require_training("torch")
    target = torch.zeros(logits.shape[0], dtype=torch.long)
    return torch.nn.functional.cross_entropy(logits, target)


def distillation_loss(logits: Any, teacher_logits: Any) -> Any:
    """KL divergence of the softmax over each row of ``logits`` from the teacher's softmax over
    the same row (mean over rows)."""
    torch = require_training("torch")
    functional = torch.nn.functional
    return functional.kl_div(
        functional.log_softmax(logits, dim=1),
        functional.log_softmax(teacher_logits, dim=1),
        reduction="batchmean",
        log_target=True,
    )


def schedule(step: int, total: int, warmup: int) -> float:
    """Linear warm-up over ``warmup`` steps, then linear decay to 0 at ``total``."""
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (total - step) / max(1, total - warmup))


def _optimizer(model: Any, settings: LoopSettings, total_steps: int) -> tuple[Any, Any]:
    """AdamW over the body and head parameter groups, and its warm-up/decay scheduler."""
    torch = require_training("torch")
    named = list(model.named_parameters())
    body = [p for n, p in named if n.startswith(BODY_PREFIXES)]
    head = [p for n, p in named if not n.startswith(BODY_PREFIXES)]
    optimizer = torch.optim.AdamW(
        [{"params": body, "lr": settings.lr_body}, {"params": head, "lr": settings.lr_head}],
        weight_decay=settings.weight_decay,
    )
    warmup_steps = max(1, round(settings.warmup * total_steps))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: schedule(step, total_steps, warmup_steps)
    )
    return optimizer, scheduler


def fit(
    model: Any,
    tokenizer: Any,
    examples: TrainingSet,
    settings: LoopSettings,
    *,
    teacher: Any = None,
    show_progress: bool = False,
) -> list[float]:
    """Train ``model`` in place on ``examples``' pairs; the loss of every step.

    The pairs are visited in a fresh seeded order every epoch; the last epoch stops at
    ``settings.total_steps``. ``teacher`` (a PyTorch cross-encoder with ``model``'s tokenizer,
    or None) scores every group too, and the loss adds ``distillation_loss``.
    """
    torch = require_training("torch")
    pairs = examples.pairs
    total_steps = settings.total_steps(len(pairs))
    optimizer, scheduler = _optimizer(model, settings, total_steps)
    rng = np.random.default_rng(settings.seed)
    losses: list[float] = []
    model.train()
    with progress_bar(total=total_steps, desc="training", show=show_progress) as bar:
        while len(losses) < total_steps:
            order = rng.permutation(len(pairs)).tolist()
            for start in range(0, len(pairs), settings.batch_size):
                if len(losses) == total_steps:
                    break
                chunk = order[start : start + settings.batch_size]
                queries, texts = listwise_groups(
                    pairs,
                    examples.pools,
                    examples.documents,
                    chunk,
                    negatives=settings.negatives,
                    mode=settings.negative_mode,
                    rng=rng,
                )
                batch = tokenize_pairs(tokenizer, queries, texts, settings.max_length)
                logits = model(**batch).logits.view(len(chunk), 1 + settings.negatives)
                loss = listwise_loss(logits)
                if teacher is not None:
                    with torch.no_grad():
                        taught = teacher(**batch).logits.view(logits.shape)
                    loss = loss + distillation_loss(logits, taught)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                losses.append(loss.item())
                bar.update(1)
                bar.set_postfix(loss=f"{np.mean(losses[-50:]):.3f}")
    return losses
