"""The one place ONNX Runtime sessions are created, with explicit CPU thread settings, and the
base of the models that run in them."""

from __future__ import annotations

import os

import onnxruntime as ort

from hybrid_engine._threads import check_threads
from hybrid_engine.model_store import ModelInfo


def create_session(path: str | os.PathLike[str], num_threads: int | None) -> ort.InferenceSession:
    """An ONNX Runtime CPU session for the model file at ``path``.

    Parameters
    ----------
    path : path-like
        An ``.onnx`` file.
    num_threads : int, optional
        Intra-op threads (all cores when None). Operators run one after another
        (``inter_op_num_threads=1``): a transformer's graph is a chain, so a second pool would
        only compete for the same cores.

    Notes
    -----
    ``InferenceSession.run`` is thread-safe and releases the GIL.
    """
    options = ort.SessionOptions()
    options.intra_op_num_threads = check_threads(num_threads)
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # warnings about unused initializers are noise to users
    # Idle pool threads sleep instead of spinning: the engine runs several models one after
    # another (bi-encoder, SPLADE, cross-encoder), and a spinning pool of one steals the
    # cores of the next.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(os.fspath(path), options, providers=["CPUExecutionProvider"])


class OnnxModel:
    """What every model of the engine shares: its prepared folder, variant, ONNX Runtime
    session and identity (``Encoder``, ``SpladeEncoder`` and ``CrossEncoder`` extend it).

    Subclasses add their tokenizer; one whose runtime settings change the outputs (the
    cross-encoder's truncation) replaces ``_model_hash`` with ``info.model_hash(variant,
    **settings)``.
    """

    def __init__(self, info: ModelInfo, variant: str, num_threads: int | None) -> None:
        """Private: use the subclass's ``load``."""
        self._info = info
        self._variant = variant
        self._session = create_session(info.variant_file(variant), num_threads)
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._model_hash = info.model_hash(variant)

    @property
    def name(self) -> str:
        """Model name, e.g. ``"all-MiniLM-L6-v2"`` (the manifest's)."""
        return self._info.name

    @property
    def variant(self) -> str:
        """``"fp32"`` or ``"int8"``."""
        return self._variant

    @property
    def model_hash(self) -> str:
        """sha256 identifying what decides the outputs: graph, tokenizer, length, pooling,
        normalisation (and any runtime setting that changes them)."""
        return self._model_hash

    @property
    def info(self) -> ModelInfo:
        """The prepared folder's manifest."""
        return self._info
