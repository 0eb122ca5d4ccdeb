"""Cross-encoder preparation: a local Hugging Face folder to a fused (and int8) ONNX folder.

Needs the ``export`` extra; run once per model, by ``hybrid-engine models prepare-reranker``.
The runtime (``CrossEncoder``) needs none of it. The source is any local folder of a BERT,
DistilBERT, RoBERTa, XLM-RoBERTa or MPNet model for sequence classification with one output (a
user's copy of cross-encoder/ms-marco-MiniLM-L-6-v2 or of the bge-reranker family, or one
trained by the engine); nothing is downloaded.

Steps: export with optimum (``text-classification``, the logit), fuse and quantize as the
bi-encoder (``export.common``), reset the tokenizer to no padding and pair truncation at the
model's ``max_length``, check the fp32 logits against PyTorch and the int8 logits against the
fp32 ones on real (query, passage) pairs, and write the folder atomically with a manifest
(``model_store``): the staged flow of ``checked.prepare_checked``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.errors import HybridEngineError
from hybrid_engine.models.export.agreement import Limit, max_diff_per_spread, spearman
from hybrid_engine.models.export.checked import Recipe, already_prepared, prepare_checked
from hybrid_engine.models.export.common import (
    ENCODER_ARCHITECTURES,
    PICKLE_WEIGHTS,
    SAFE_WEIGHTS,
    check_model_name,
    model_positions,
    pretrained_options,
    read_json,
    require,
    source_weights,
)
from hybrid_engine.models.store import CROSS_ENCODER, models_dir

MAX_LENGTH_CAP = 512
"""Longest pair a prepared cross-encoder takes, whatever its source allows."""
TRAINING_FILE = "training.json"
"""Written by the engine's reranker trainer next to the weights; copied into the manifest."""
CHECK_PAIRS = (
    (
        "Vitamin D deficiency raises the risk of multiple sclerosis.",
        "Low serum 25-hydroxyvitamin D levels were associated with a higher risk of developing "
        "multiple sclerosis in a prospective cohort of young adults.",
    ),
    (
        "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
        "Aldehyde dehydrogenase 1 is a marker of normal and malignant human mammary stem cells "
        "and a predictor of poor clinical outcome.",
    ),
    ("0-dimensional biomaterials show inductive properties.", "short"),
    (
        "Macrophages regulate inflammation in adipose tissue.",
        "The quick brown fox jumps over the lazy dog. " * 120,  # past max_length: truncated
    ),
)
MAX_TORCH_DIFF = 1e-3
"""Largest allowed |ONNX fp32 logit - PyTorch logit| on the check pairs, relative to
``max(1, |PyTorch logit|)``."""
MIN_INT8_SPEARMAN = 0.9
"""The int8 variant is kept only if the rank correlation of its logits with the fp32 graph's on
the check pairs is at least this: reranking uses the order of the scores alone (or their ranks,
in a blend), so order is what int8 must keep. A few swaps of near-equal scores cost little
(one adjacent swap among 16 pairs costs 0.003); a scrambled order drops far below."""
MAX_INT8_DIFF_PER_STD = 0.75
"""... and no int8 logit may move by more than this many standard deviations of the fp32
logits over the check pairs, which catches a single pair gone wrong that the rank figure
forgives. Both bounds are those the int8 test model keeps on 100+ SciFact pairs
(tests/test_cross_encoder.py; measured on the check pairs: Spearman 0.994, 0.34 std at 512
tokens), a random head of std 2 that magnifies the quantization error beyond a trained one's."""


def _source_settings(source: Path) -> dict[str, Any]:
    """max_length and head shape of a single-logit classifier of one of the
    ``ENCODER_ARCHITECTURES``, or a clear refusal."""
    if not (source / "config.json").is_file():
        raise HybridEngineError(
            f"{source} has no config.json; give a local Hugging Face model folder (the one "
            "save_pretrained writes)"
        )
    config = read_json(source / "config.json")
    architectures = config.get("architectures") or []
    num_labels = len(config.get("id2label") or {}) or int(config.get("num_labels", 2))
    problems = []
    if config.get("model_type") not in ENCODER_ARCHITECTURES:
        problems.append(
            f"model_type {config.get('model_type')!r} is not one of {list(ENCODER_ARCHITECTURES)}"
        )
    if not any(name.endswith("ForSequenceClassification") for name in architectures):
        problems.append(f"architectures {architectures} lack a ...ForSequenceClassification")
    if num_labels != 1:
        problems.append(f"it has {num_labels} labels, not one relevance logit")
    if not (source / "tokenizer.json").is_file():
        problems.append("it has no tokenizer.json (a fast tokenizer's file)")
    if not any(source.glob(SAFE_WEIGHTS)) and not any(source.glob(PICKLE_WEIGHTS)):
        problems.append(
            "it has none of the weight files ['model.safetensors', 'pytorch_model.bin']"
        )
    if problems:
        raise HybridEngineError(
            f"{source} is not a cross-encoder with one output: "
            + "; ".join(problems)
            + ". prepare-reranker takes a BERT, DistilBERT, RoBERTa, XLM-RoBERTa or MPNet "
            "...ForSequenceClassification folder with num_labels=1 (e.g. a copy of "
            "cross-encoder/ms-marco-MiniLM-L-6-v2 or BAAI/bge-reranker-base)"
        )
    limits = [MAX_LENGTH_CAP, model_positions(config)]
    if (source / "tokenizer_config.json").is_file():
        limit = read_json(source / "tokenizer_config.json").get("model_max_length")
        if isinstance(limit, int) and limit > 0:  # a huge sentinel when unset; capped anyway
            limits.append(limit)
    return {"max_length": min(limits), "num_labels": num_labels}


def _check_queries_passages() -> tuple[list[str], list[str]]:
    """Every query of ``CHECK_PAIRS`` with every passage (16 pairs): scores spread from the
    matching pairs to unrelated ones, so their order means something."""
    pairs = [(query, passage) for query, _ in CHECK_PAIRS for _, passage in CHECK_PAIRS]
    return [query for query, _ in pairs], [passage for _, passage in pairs]


def _outputs(staged: Path, variant: str) -> np.ndarray:
    """The staged model's logits of the check pairs."""
    from hybrid_engine.models.cross_encoder import CrossEncoder

    return CrossEncoder.load(staged, variant=variant).score(*_check_queries_passages())


def _torch_reference(source: Path, max_length: int, weights: dict[str, str]) -> np.ndarray:
    """PyTorch's logits of the check pairs, the passage truncated to fit ``max_length``, from
    the weight files ``weights`` names."""
    torch = require("torch")
    transformers = require("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
    options = pretrained_options(weights)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        str(source), **options
    ).eval()
    batch = tokenizer(
        *_check_queries_passages(),
        padding=True,
        truncation="only_second",
        max_length=max_length,
        return_tensors="pt",
    )
    with torch.inference_mode():
        return model(**batch).logits[:, 0].numpy()


def _relative_diff(ours: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    diff = np.abs(ours - reference) / np.maximum(1.0, np.abs(reference))
    return {"torch_max_logit_diff": float(diff.max())}


def _validation(
    validate: Callable[[Path, str], dict[str, Any]],
) -> Callable[[Path, dict[str, Any]], None]:
    """The ``Recipe.finish`` step storing ``validate``'s training record of the staged model
    in its served variant."""

    def finish(staged: Path, metadata: dict[str, Any]) -> None:
        variant = "int8" if "int8" in metadata["variants"] else "fp32"
        metadata["training"] = validate(staged, variant)

    return finish


def prepare_cross_encoder(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    *,
    name: str | None = None,
    int8: bool = True,
    force: bool = False,
    log: Callable[[str], None] = lambda message: None,
    validate: Callable[[Path, str], dict[str, Any]] | None = None,
    allow_pickle_weights: bool = False,
) -> Path:
    """Export a local cross-encoder into a prepared model folder.

    Parameters
    ----------
    source : path-like
        A local Hugging Face folder of a ``...ForSequenceClassification`` of one of the
        ``ENCODER_ARCHITECTURES`` with one label (``config.json``, ``model.safetensors``,
        ``tokenizer.json``).
        A ``training.json`` beside them (written by the engine's trainer) is copied into the
        manifest under ``"training"``.
    output : path-like, optional
        Folder to write; ``store.models_dir() / name`` when None. Written atomically.
    name : str, optional
        Model name recorded in the manifest; the source folder's name when None.
    int8 : bool
        Also quantize; the int8 logits of the check pairs must keep their fp32 order and size
        (``MIN_INT8_SPEARMAN``, ``MAX_INT8_DIFF_PER_STD``), or that variant is dropped with an
        ``Int8DroppedWarning``.
    force : bool
        Overwrite a folder that is already prepared (else it is kept as it is).
    log : callable
        Called with each step's line and figures.
    validate : callable, optional
        ``validate(staged, variant)``: runs on the staged folder after its checks, with the
        variant serving will load (int8 when prepared and kept, else fp32), and returns the
        training record the manifest stores under ``"training"`` (instead of the source's
        ``training.json``). The trainer's gate scores exactly the prepared model this way.
    allow_pickle_weights : bool
        Read pickled weights (``pytorch_model.bin``) when the source has no safetensors ones;
        off by default, since unpickling can run code (``common.source_weights``).

    Returns
    -------
    Path
        The cross-encoder's prepared folder.

    Raises
    ------
    HybridEngineError
        The source is not a single-logit classifier the engine runs (the message says why), has
        only pickled weights and ``allow_pickle_weights`` is off, the ``export`` extra is
        missing (the message gives the install command), or the fp32 logits disagree with
        PyTorch's (``MAX_TORCH_DIFF``).
    """
    source = Path(source).resolve()
    if not source.is_dir():
        raise HybridEngineError(f"{source} is not a folder; give a local Hugging Face model folder")
    name = check_model_name(name if name is not None else source.name)
    target = Path(output) if output is not None else models_dir() / name
    if already_prepared(target, force, log):
        return target
    settings = _source_settings(source)
    weights = source_weights(source, allow_pickle_weights=allow_pickle_weights)
    metadata: dict[str, Any] = {
        "name": name,
        "kind": CROSS_ENCODER,
        "source": {"path": str(source), "weights_sha256": weights},
        "num_labels": settings["num_labels"],
        "max_length": settings["max_length"],
    }
    if (source / TRAINING_FILE).is_file():
        metadata["training"] = read_json(source / TRAINING_FILE)
    recipe = Recipe(
        source=source,
        task="text-classification",
        max_length=settings["max_length"],
        pair=True,
        metadata=metadata,
        outputs=_outputs,
        reference=lambda: _torch_reference(source, settings["max_length"], weights),
        torch_figures=_relative_diff,
        torch_limits=(Limit("torch_max_logit_diff", MAX_TORCH_DIFF, at_least=False),),
        int8_figures=lambda int8, fp32: {
            "int8_spearman": spearman(int8, fp32),
            "int8_max_diff_per_std": max_diff_per_spread(int8, fp32),
        },
        int8_limits=(
            Limit("int8_spearman", MIN_INT8_SPEARMAN),
            Limit("int8_max_diff_per_std", MAX_INT8_DIFF_PER_STD, at_least=False),
        ),
        finish=_validation(validate) if validate is not None else None,
    )
    return prepare_checked(target, recipe, int8=int8, log=log)
