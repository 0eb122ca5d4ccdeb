"""What both trainers (``trainer.train_reranker``, ``encoder_trainer.train_encoder``) set up
before their own steps: the folders they will write, checked free, and PyTorch seeded and
threaded."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

from hybrid_engine.models.store import models_dir


def output_folders(
    output: str | os.PathLike[str],
    prepared_output: str | os.PathLike[str] | None,
    *,
    check_prepared: bool = True,
) -> tuple[Path, Path]:
    """(output, prepared): the trained model's folder and its prepared ONNX folder
    (``store.models_dir() / output.name`` when ``prepared_output`` is None).

    Raises
    ------
    FileExistsError
        ``output`` exists, or ``check_prepared`` and the prepared folder holds a model.
    """
    output = Path(output)
    prepared = Path(prepared_output) if prepared_output else models_dir() / output.name
    if output.exists():
        raise FileExistsError(f"{output} exists; choose a new output folder or remove it")
    if check_prepared and (prepared / "manifest.json").is_file():
        raise FileExistsError(
            f"{prepared} holds a prepared model; choose another prepared folder or remove it"
        )
    return output, prepared


def seed_torch(torch: Any, seed: int, num_threads: int | None) -> None:
    """Seed Python's ``random`` and PyTorch (the ``torch`` module given) with ``seed``, and
    give PyTorch ``num_threads`` threads (None: leave its default, all cores)."""
    random.seed(seed)
    torch.manual_seed(seed)
    if num_threads:
        torch.set_num_threads(num_threads)
