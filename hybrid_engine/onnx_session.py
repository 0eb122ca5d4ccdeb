"""The one place ONNX Runtime sessions are created, with explicit CPU thread settings."""

from __future__ import annotations

import os

import onnxruntime as ort

from hybrid_engine._threads import check_threads


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
