"""The staged, checked preparation every model kind runs over its ``Recipe``.

``prepare_checked`` exports the model (``common.export_model``) into a scratch folder, stages
the prepared folder there, checks its fp32 graph against PyTorch on the kind's check inputs
(the preparation fails if they disagree) and its int8 graph against the fp32 graph (8-bit
weights, else 7-bit ones, else the int8 variant is dropped with an ``Int8DroppedWarning``), and
only then writes the folder in place, atomically.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hybrid_engine.errors import HybridEngineError
from hybrid_engine.models.export import common
from hybrid_engine.models.export.agreement import Limit, broken_limits, format_figures
from hybrid_engine.models.export.common import INT8_7BIT_QUANTIZATION, Int8DroppedWarning
from hybrid_engine.models.store import FORMAT, FORMAT_VERSION, VARIANT_FILES
from hybrid_engine.storage import write_index_dir


@dataclass(frozen=True)
class Recipe:
    """One model kind's part of a preparation: what to export, and how to check it.

    Attributes
    ----------
    source : Path
        The local Hugging Face folder exported.
    task, max_length, pair, transform
        As in ``export_model``.
    metadata : dict
        The kind's manifest entries (name, kind, source, dims...); the flow adds ``variants``
        and ``export``.
    outputs : callable
        ``outputs(staged, variant)``: the staged folder's outputs on the kind's check inputs,
        one row (or value) per input.
    reference : callable
        ``reference()``: PyTorch's outputs on the same inputs.
    torch_figures : callable
        ``torch_figures(fp32_outputs, reference)``: the figures recorded in the manifest's
        ``export``.
    torch_limits : tuple of Limit
        Limits of those figures; the preparation fails when one is broken.
    int8_figures : callable
        ``int8_figures(int8_outputs, fp32_outputs)``: the int8 variant's agreement with the
        fp32 graph, recorded under the manifest's ``export["int8_vs_fp32"]``.
    int8_limits : tuple of Limit
        Limits of those figures; the int8 variant is dropped when one is broken.
    finish : callable, optional
        ``finish(staged, metadata)``: runs on the staged folder once the checks have settled
        the variants (``metadata["variants"]``) and may add manifest entries before the write.
    """

    source: Path
    task: str
    max_length: int
    pair: bool
    metadata: dict[str, Any]
    outputs: Callable[[Path, str], np.ndarray]
    reference: Callable[[], np.ndarray]
    torch_figures: Callable[[np.ndarray, np.ndarray], dict[str, float]]
    torch_limits: tuple[Limit, ...]
    int8_figures: Callable[[np.ndarray, np.ndarray], dict[str, float]]
    int8_limits: tuple[Limit, ...]
    transform: Callable[[Any], None] | None = None
    finish: Callable[[Path, dict[str, Any]], None] | None = None


def already_prepared(target: Path, force: bool, log: Callable[[str], None]) -> bool:
    """Whether ``target`` holds a prepared model to keep (it does, and ``force`` is off)."""
    if (target / "manifest.json").is_file() and not force:
        log(f"{target} is already prepared (use --force to prepare it again)")
        return True
    return False


def prepare_checked(
    target: Path, recipe: Recipe, *, int8: bool, log: Callable[[str], None]
) -> Path:
    """Export ``recipe``'s model, stage the folder, check it, then write it at ``target``.

    Returns
    -------
    Path
        ``target``.

    Warns
    -----
    Int8DroppedWarning
        The int8 graph broke one of ``recipe.int8_limits``: the folder is written without it.

    Raises
    ------
    HybridEngineError
        The export extra is missing, the fusions did not apply, or the fp32 graph broke one of
        ``recipe.torch_limits`` (``target`` is then left untouched).
    """
    with tempfile.TemporaryDirectory(prefix="hybrid_engine-export-") as tmp:
        work = Path(tmp)
        exported = common.export_model(
            recipe.source,
            work,
            task=recipe.task,
            max_length=recipe.max_length,
            pair=recipe.pair,
            int8=int8,
            log=log,
            transform=recipe.transform,
        )
        variants = dict(exported.variants)
        metadata = {**recipe.metadata, "variants": variants, "export": exported.export}
        staged = work / "staged"
        write_index_dir(staged, FORMAT, FORMAT_VERSION, metadata, {}, exported.components)
        fp32 = recipe.outputs(staged, "fp32")
        figures = recipe.torch_figures(fp32, recipe.reference())
        log(f"fp32 ONNX vs PyTorch: {format_figures(figures)}")
        broken = broken_limits(figures, recipe.torch_limits)
        if broken:
            raise HybridEngineError(
                f"the exported graph disagrees with PyTorch ({format_figures(figures)}; needs "
                f"{', '.join(broken)}); please report this with your package versions"
            )
        metadata["export"].update(figures)
        components = dict(exported.components)
        if int8:
            staged = _settle_int8(recipe, work, staged, fp32, metadata, components, log)
        if recipe.finish is not None:
            recipe.finish(staged, metadata)
        write_index_dir(target, FORMAT, FORMAT_VERSION, metadata, {}, components)
    log(f"prepared {target}")
    return target


def _settle_int8(
    recipe: Recipe,
    work: Path,
    staged: Path,
    fp32: np.ndarray,
    metadata: dict[str, Any],
    components: dict[str, Callable[[Path], None]],
    log: Callable[[str], None],
) -> Path:
    """Keep the staged 8-bit graph if it agrees with fp32; else stage and check one with 7-bit
    weights (``INT8_7BIT_QUANTIZATION``); else drop the int8 variant (``metadata`` and
    ``components`` are edited to match) and warn. Returns the staged folder that holds what
    is kept."""
    if not _int8_broken(recipe, staged, fp32, metadata, log):
        return staged
    metadata["export"]["int8_8bit_vs_fp32"] = metadata["export"].pop("int8_vs_fp32")
    log("quantizing again with 7-bit weights (reduce_range)")
    (work / "7bit").mkdir()
    graph = staged / VARIANT_FILES["fp32"]
    components[VARIANT_FILES["int8"]] = common.copier(
        common.quantize(graph, work / "7bit", reduce_range=True)
    )
    metadata["variants"]["int8"]["quantization"] = INT8_7BIT_QUANTIZATION
    staged = work / "staged-7bit"
    write_index_dir(staged, FORMAT, FORMAT_VERSION, metadata, {}, components)
    broken = _int8_broken(recipe, staged, fp32, metadata, log)
    if not broken:
        return staged
    figures = {
        key: value
        for key, value in metadata["export"]["int8_vs_fp32"].items()
        if key not in ("limits", "kept")
    }
    message = (
        f"the int8 variant disagrees with the fp32 graph ({format_figures(figures)}; needs "
        f"{', '.join(broken)}), with 8-bit and with 7-bit weights: "
        f"{recipe.metadata['name']} is prepared without it; use the fp32 variant"
    )
    log(message)
    warnings.warn(message, Int8DroppedWarning, stacklevel=5)  # the caller of prepare_*
    del metadata["variants"]["int8"]
    del components[VARIANT_FILES["int8"]]
    return staged


def _int8_broken(
    recipe: Recipe,
    staged: Path,
    fp32: np.ndarray,
    metadata: dict[str, Any],
    log: Callable[[str], None],
) -> list[str]:
    """The limits the staged int8 graph breaks against the fp32 one (none: it agrees); the
    figures, the limits and the verdict go to ``metadata["export"]["int8_vs_fp32"]``."""
    figures = recipe.int8_figures(recipe.outputs(staged, "int8"), fp32)
    broken = broken_limits(figures, recipe.int8_limits)
    limits = [str(limit) for limit in recipe.int8_limits]
    metadata["export"]["int8_vs_fp32"] = {**figures, "limits": limits, "kept": not broken}
    log(f"int8 vs fp32 ONNX: {format_figures(figures)} (needs {', '.join(limits)})")
    return broken
