"""What the framework adapters share: the ``HybridIndex.search`` options they pass through,
checked when an adapter is made, and the text a hit hands to a framework."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hybrid_engine import Hit
from hybrid_engine.pipeline import plan

SEARCH_OPTIONS = frozenset(("k", *plan.SEARCH_OPTIONS))
"""The parameters of a search after the queries (``plan.SEARCH_OPTIONS`` and ``k``):
``filter``, ``rerank``, ``mmr``, ``fusion``, ``weights``, ``depth`` and the others
``HybridIndex.search`` documents."""


def check_search_options(
    options: Mapping[str, Any], *, where: str, taken: Iterable[str] = ()
) -> dict[str, Any]:
    """A copy of ``options`` once every key is a ``HybridIndex.search`` parameter.

    Parameters
    ----------
    options : dict of str to any
        Keyword arguments for ``HybridIndex.search``; their values are checked by the search.
    where : str
        What the options were given to, for the message (e.g. ``"search_kwargs"``).
    taken : iterable of str
        Parameters the adapter sets under its own name (e.g. LlamaIndex's
        ``similarity_top_k`` for ``k``): refused here, naming the adapter's one.

    Raises
    ------
    TypeError
        ``options`` is not a mapping, or a key is not a ``str``.
    ValueError
        A key that is no ``HybridIndex.search`` parameter (the message lists them), or one
        in ``taken``.
    """
    if not isinstance(options, Mapping):
        raise TypeError(f"{where} must be a dict of HybridIndex.search options, got {options!r}")
    taken = set(taken)
    for key in options:
        if not isinstance(key, str):
            raise TypeError(f"{where} keys must be str, got {key!r}")
        if key in taken:
            raise ValueError(f"{where} may not set {key!r}: the adapter sets it itself")
        if key not in SEARCH_OPTIONS:
            raise ValueError(
                f"{where} has {key!r}, which is no HybridIndex.search option; "
                f"use one of {sorted(SEARCH_OPTIONS - taken)}"
            )
    return dict(options)


def hit_text(hit: Hit) -> str:
    """The text the engine indexed for a hit: its title, a space and its text (the text
    alone when it has no title), what BM25 and the encoders scored."""
    return f"{hit.title} {hit.text}" if hit.title else hit.text
