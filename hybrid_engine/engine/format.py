"""A ``HybridIndex`` on disk, and the settings its segments are built with.

A saved engine is a live index directory (``live.commits``): segments, deletion masks and
commit points, the latest naming the engine's settings (``live.config.EngineConfig``) with
the prepared model of each model leg, which ``read_engine`` loads when given no encoder.
Directories of the immutable format of earlier versions (a ``manifest.json`` of format
``"hybrid_engine.hybrid"``) are refused with the command that rebuilds them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from hybrid_engine._version import __version__
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.live import commits, leftovers
from hybrid_engine.live.config import EngineConfig, check_positions, check_title_weight
from hybrid_engine.live.state import LiveState
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.session import TextModel
from hybrid_engine.models.splade import SpladeEncoder
from hybrid_engine.models.store import VARIANT_FILES, ModelNotFoundError, models_dir
from hybrid_engine.pipeline.degradation import warn_degraded
from hybrid_engine.pipeline.legs import (
    BM25_OPTIONS,
    DEFAULT_DENSE_OPTIONS,
    DENSE_OPTIONS,
    Legs,
    check_options,
    check_retrievers,
)
from hybrid_engine.protocols import SparseEncoder, TextEncoder
from hybrid_engine.storage import MANIFEST

IMMUTABLE_FORMAT = "hybrid_engine.hybrid"
"""The format of engines saved by hybrid_engine before the live index."""
_MODEL_LEGS = {"dense": "encoder", "splade": "splade_encoder"}
"""The legs that run a model, and the ``HybridIndex.load`` argument that gives it."""
_OPEN_ATTEMPTS = 5
"""Times ``read_engine`` starts over when a writer removes files of the commit it reads."""
_Model = TypeVar("_Model", bound=TextModel)


def engine_config(
    chosen: tuple[str, ...],
    *,
    bm25_options: Mapping[str, Any] | None,
    dense_options: Mapping[str, Any] | None,
    encoder: TextEncoder | None,
    splade_encoder: SparseEncoder | None,
    num_threads: int | None,
) -> tuple[EngineConfig, TextEncoder | None, SparseEncoder | None]:
    """The settings of a new engine of ``chosen`` retrievers, with its encoders (the default
    prepared ones where none is given); the options are checked first."""
    bm25 = check_options("bm25_options", bm25_options, BM25_OPTIONS, "bm25", chosen)
    if "title_weight" in bm25:
        check_title_weight(bm25["title_weight"])
    if "positions" in bm25:
        check_positions(bm25["positions"])
    dense = check_options("dense_options", dense_options, DENSE_OPTIONS, "dense", chosen)
    models: dict[str, dict[str, str] | None] = {}
    if "dense" in chosen:
        dense = {**DEFAULT_DENSE_OPTIONS, **dense}
        encoder = encoder if encoder is not None else Encoder.load(num_threads=num_threads)
        models["dense"] = _model_record(encoder)
    if "splade" in chosen:
        if splade_encoder is None:
            splade_encoder = SpladeEncoder.load(num_threads=num_threads)
        models["splade"] = _model_record(splade_encoder)
    config = EngineConfig(retrievers=chosen, bm25=bm25, dense=dense, models=models)
    return config, encoder, splade_encoder


def leg_config(legs: Legs) -> EngineConfig:
    """The settings that build new segments like the prebuilt ``legs``."""
    bm25: dict[str, Any] = {}
    dense: dict[str, Any] = {}
    models: dict[str, dict[str, str] | None] = {}
    if legs.bm25 is not None:
        params = legs.bm25.params
        bm25 = {"k1": params.k1, "b": params.b, "method": params.method, "delta": params.delta}
        bm25["analyzer"] = legs.bm25.analyzer
    if legs.dense is not None:
        index = legs.dense
        dense = {
            "metric": index.metric,
            "m": index.m,
            "ef_construction": index.ef_construction,
            "ef_search": index.ef_search,
            "exact_threshold": index.exact_threshold,
        }
        models["dense"] = _model_record(index.encoder)
    scale = None
    if legs.splade is not None:
        scale = legs.splade.scale
        models["splade"] = _model_record(legs.splade.encoder)
    return EngineConfig(
        retrievers=legs.retrievers, bm25=bm25, dense=dense, splade_scale=scale, models=models
    )


def read_engine(
    path: Path,
    *,
    encoder: TextEncoder | None,
    splade_encoder: SparseEncoder | None,
    num_threads: int | None,
    mmap: bool | str,
    allow_degraded: bool = False,
) -> tuple[LiveState, dict[str, str]]:
    """The last commit of the index at ``path`` (``HybridIndex.load`` documents the
    arguments), attached to it; started over when a writer removed its files meanwhile. With
    ``allow_degraded``, a leg whose recorded model is missing or damaged is left out of the
    state, with a ``DegradedWarning``. What interrupted writes left there is removed first,
    when no writer holds the lock (``leftovers.remove_at_open``: best-effort, skipped where
    this process may not write).

    Returns
    -------
    state : LiveState
    unloaded : dict of str to str
        The legs left out, with why.

    Raises
    ------
    IndexFormatError
        A missing, corrupt or foreign directory, or one of the immutable format; a damaged
        model (unless ``allow_degraded``).
    ModelNotFoundError
        A recorded model that is not prepared (unless ``allow_degraded``).
    ValueError
        With ``allow_degraded``, every leg's model failed: nothing is left to search.
    """
    _refuse_immutable(path)
    leftovers.remove_at_open(path)
    for attempt in range(_OPEN_ATTEMPTS):
        point = commits.read_commit(path)
        try:
            config = EngineConfig.from_dict(point.config)
            check_retrievers(config.retrievers)
            models = _read_records(config.models, config.retrievers)
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexFormatError(f"{path}: bad commit point ({exc}); rebuild the index") from None
        unloaded: dict[str, Exception] = {}
        if "dense" in config.retrievers and encoder is None:
            encoder = _load_leg_model(Encoder, path, "dense", models, num_threads, unloaded)
        if "splade" in config.retrievers and splade_encoder is None:
            splade_encoder = _load_leg_model(
                SpladeEncoder, path, "splade", models, num_threads, unloaded
            )
        if unloaded and not allow_degraded:
            raise next(iter(unloaded.values()))
        config = _without(config, unloaded)
        try:
            state = LiveState.open(
                path, point, config, encoder=encoder, splade_encoder=splade_encoder, mmap=mmap
            )
            for leg, error in unloaded.items():
                warn_degraded(leg, f"its model could not be loaded: {error}")
            return state, {leg: str(error) for leg, error in unloaded.items()}
        except (FileNotFoundError, IndexFormatError):
            if commits.read_commit(path).generation == point.generation:
                raise  # nothing newer: the commit itself is damaged
            time.sleep(0.01 * (attempt + 1))
    raise IndexFormatError(
        f"{path} changed under every one of {_OPEN_ATTEMPTS} attempts to read it; retry"
    )


def _refuse_immutable(path: Path) -> None:
    manifest = path / MANIFEST
    if commits.is_live_index(path) or not manifest.is_file():
        return
    try:
        values = json.loads(manifest.read_text(encoding="utf-8"))
        found, version, writer = (
            values.get(key) for key in ("format", "format_version", "library_version")
        )
    except (OSError, ValueError, AttributeError):
        found = version = writer = None
    if found == IMMUTABLE_FORMAT:
        raise IndexFormatError(
            f"{path} is a hybrid index of format {IMMUTABLE_FORMAT} version {version} (written "
            f"by hybrid_engine {writer}), the immutable format of hybrid_engine before the live "
            f"index; this hybrid_engine {__version__} reads {commits.FORMAT} version "
            f"{commits.FORMAT_VERSION} only, so rebuild it: HybridIndex.build(corpus, ...)"
            ".save(new_path), or `hybrid-engine index CORPUS NEW_PATH`"
        )


def _load_leg_model(
    cls: type[_Model],
    path: Path,
    leg: str,
    models: dict[str, tuple[str, str] | None],
    num_threads: int | None,
    unloaded: dict[str, Exception],
) -> _Model | None:
    """``_load_model``, or None with the error in ``unloaded`` when the model is missing or
    damaged."""
    try:
        return _load_model(cls, path, leg, models, num_threads)
    except (ModelNotFoundError, IndexFormatError) as exc:
        unloaded[leg] = exc
        return None


def _without(config: EngineConfig, unloaded: Mapping[str, object]) -> EngineConfig:
    """``config`` without the legs of ``unloaded``.

    Raises
    ------
    ValueError
        No leg is left.
    """
    if not unloaded:
        return config
    left = tuple(leg for leg in config.retrievers if leg not in unloaded)
    if not left:
        raise ValueError(
            f"no leg of the index can be loaded: {'; '.join(map(str, unloaded.values()))}"
        )
    return replace(config, retrievers=left)


def _model_record(encoder: object) -> dict[str, str] | None:
    """``{"name", "variant"}`` of a prepared model (what ``Encoder.load`` and
    ``SpladeEncoder.load`` take back), plus its absolute ``"path"`` when the folder is not
    the one its name finds in ``store.models_dir()`` (a fine-tuned model prepared elsewhere)
    and its ``"query_prefix"`` and ``"document_prefix"`` when it has any (for the reader: the
    model's ``model_hash``, which the dense leg records and checks, covers them); None for
    any other encoder."""
    if not isinstance(encoder, TextModel):
        return None
    record = {"name": encoder.name, "variant": encoder.variant}
    if encoder.info.query_prefix or encoder.info.document_prefix:
        record["query_prefix"] = encoder.info.query_prefix
        record["document_prefix"] = encoder.info.document_prefix
    folder = encoder.info.path.resolve()
    if folder != (models_dir() / encoder.name).resolve():
        record["path"] = str(folder)
    return record


def _read_records(records: Any, retrievers: tuple[str, ...]) -> dict[str, tuple[str, str] | None]:
    """The manifest's ``"models"`` as leg to (name, variant), or None (the recorded path in
    place of the name when there is one); ValueError or
    TypeError when malformed or missing a model leg of ``retrievers``."""
    if not isinstance(records, dict):
        raise TypeError(f"models is {type(records).__name__}, not a dict")
    missing = [leg for leg in _MODEL_LEGS if leg in retrievers and leg not in records]
    if missing:
        raise ValueError(f"models records no model of the {', '.join(missing)} leg")
    models: dict[str, tuple[str, str] | None] = {}
    for leg, record in records.items():
        if leg not in _MODEL_LEGS:
            raise ValueError(f"models names leg {leg!r}")
        if record is None:
            models[leg] = None
            continue
        name = record["path"] if "path" in record else record["name"]
        variant = record["variant"]
        if not isinstance(name, str) or variant not in VARIANT_FILES:
            raise ValueError(f"models[{leg!r}] is {record!r}")
        models[leg] = (name, variant)
    return models


def _load_model(
    cls: type[_Model],
    path: Path,
    leg: str,
    models: dict[str, tuple[str, str] | None],
    num_threads: int | None,
) -> _Model:
    """The model (of class ``cls``) that built ``leg``, as ``models`` records it."""
    argument = _MODEL_LEGS[leg]
    record = models[leg]
    if record is None:
        raise ValueError(
            f"{path}: the {leg} leg was built with an encoder that is not a prepared model, so "
            f"the index cannot load it by name; pass {argument}= to HybridIndex.load"
        )
    name, variant = record
    rescue = f"; or pass {argument}= to HybridIndex.load, or load without the {leg} leg: " + (
        "HybridIndex.load(..., allow_degraded=True)"
    )
    try:
        return cls.load(name, variant=variant, num_threads=num_threads)
    except ModelNotFoundError as exc:
        raise ModelNotFoundError(
            f"{path} was built with the {leg} model {name!r} ({variant}): {exc}{rescue}"
        ) from None
    except IndexFormatError as exc:
        raise IndexFormatError(
            f"{path} was built with the {leg} model {name!r} ({variant}): {exc}{rescue}"
        ) from None
