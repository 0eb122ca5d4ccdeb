"""A retrieval stack as one value: which retrievers an engine builds, and how a search fuses
and reranks them. ``HybridIndex.build(stack=...)`` and ``HybridIndex.search(stack=...)`` take
it; ``hybrid-engine pick`` recommends one."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Real
from types import MappingProxyType
from typing import Any

from hybrid_engine.checks import check_int
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD, METHODS
from hybrid_engine.pipeline.legs import DEFAULT_RETRIEVERS, check_retrievers

DEFAULT_DEPTH = 100
"""Hits each retriever hands to fusion."""
_KEYS = ("retrievers", "fusion", "weights", "depth", "rerank")


@dataclass(frozen=True)
class Stack:
    """A retrieval configuration: the legs, their fusion and the reranking depth.

    Attributes
    ----------
    retrievers : tuple of {"bm25", "dense", "splade"}
        The legs ``HybridIndex.build(stack=...)`` indexes, kept in ``legs.RETRIEVERS`` order.
    fusion : str
        ``fusion.fuse``'s method (one of ``fusion.METHODS``).
    weights : mapping of str to float, optional
        Fusion weight by retriever name (a retriever not named weighs 1.0); finite, >= 0 and
        naming only ``retrievers``. None: 1.0 each. Stored read-only.
    depth : int
        Hits each retriever hands to fusion, >= 1.
    rerank : int, optional
        Fused hits per query the engine's cross-encoder re-orders; None: no reranking.

    Raises
    ------
    ValueError
        An unknown retriever or fusion method, a weight naming a retriever not in the stack
        or negative/not finite, all weights 0, or a depth or rerank below 1.
    TypeError
        ``weights`` not a mapping, or a weight not a number.

    Notes
    -----
    Immutable and safe to share between threads. Equal stacks compare equal; a stack with
    weights is not hashable (the weights are a mapping).
    """

    retrievers: tuple[str, ...] = DEFAULT_RETRIEVERS
    fusion: str = DEFAULT_METHOD
    weights: Mapping[str, float] | None = field(default=None)
    depth: int = DEFAULT_DEPTH
    rerank: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "retrievers", check_retrievers(self.retrievers))
        if self.fusion not in METHODS:
            raise ValueError(
                f"unknown fusion method {self.fusion!r}; choose one of {list(METHODS)}"
            )
        if self.weights is not None:
            object.__setattr__(self, "weights", MappingProxyType(self._checked_weights()))
        object.__setattr__(self, "depth", check_int("depth", self.depth, 1))
        if self.rerank is not None:
            object.__setattr__(self, "rerank", check_int("rerank", self.rerank, 1))

    def _checked_weights(self) -> dict[str, float]:
        if not isinstance(self.weights, Mapping):
            raise TypeError(
                "weights must be a dict of retriever name to weight, e.g. "
                f"{{'bm25': 2.0, 'dense': 1.0}}, got {type(self.weights).__name__}"
            )
        unknown = [name for name in self.weights if name not in self.retrievers]
        if unknown:
            raise ValueError(
                f"weights name {unknown}, which the stack does not combine; its retrievers are "
                f"{list(self.retrievers)}"
            )
        weights: dict[str, float] = {}
        for name, weight in self.weights.items():
            if isinstance(weight, bool) or not isinstance(weight, Real):
                raise TypeError(f"weights[{name!r}] is {type(weight).__name__}, expected a number")
            if not math.isfinite(weight) or weight < 0:
                raise ValueError(f"weights[{name!r}] must be finite and >= 0, got {weight!r}")
            weights[name] = float(weight)
        if all(weights.get(name, 1.0) == 0 for name in self.retrievers):
            raise ValueError("the weights are all 0; give at least one retriever a weight > 0")
        return weights

    def to_dict(self) -> dict[str, Any]:
        """The stack as JSON-ready values: ``retrievers`` a list, ``weights`` a dict or None.

        ``Stack.from_dict(stack.to_dict()) == stack``.
        """
        return {
            "retrievers": list(self.retrievers),
            "fusion": self.fusion,
            "weights": None if self.weights is None else dict(self.weights),
            "depth": self.depth,
            "rerank": self.rerank,
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Stack:
        """The stack of ``to_dict``'s shape; a missing key takes its default.

        Raises
        ------
        TypeError
            ``values`` is not a mapping.
        ValueError
            A key outside ``retrievers``, ``fusion``, ``weights``, ``depth``, ``rerank`` (the
            message names it and lists the valid ones), or a bad value (as ``Stack`` raises).
        """
        if not isinstance(values, Mapping):
            raise TypeError(f"a stack is a JSON object (dict), got {type(values).__name__}")
        unknown = sorted(set(values) - set(_KEYS))
        if unknown:
            raise ValueError(f"unknown stack key(s) {unknown}; the keys are {list(_KEYS)}")
        options = dict(values)
        if "retrievers" in options:
            retrievers = options["retrievers"]
            options["retrievers"] = (retrievers,) if isinstance(retrievers, str) else retrievers
        return cls(**options)

    def describe(self) -> str:
        """One line, e.g. ``"bm25+dense, dbsf fusion of the top 100, weights bm25=2, no
        rerank"``."""
        legs = "+".join(self.retrievers)
        if len(self.retrievers) == 1:
            line = f"{legs} alone"
        else:
            line = f"{legs}, {self.fusion} fusion of the top {self.depth}"
            if self.weights:
                line += ", weights " + " ".join(f"{n}={w:g}" for n, w in self.weights.items())
        rerank = f"cross-encoder reranks the top {self.rerank}" if self.rerank else "no rerank"
        return f"{line}, {rerank}"


def search_options(
    stack: Stack | None,
    fusion: str,
    weights: Mapping[str, float] | None,
    depth: int,
    rerank: int | None,
    retrievers: tuple[str, ...],
) -> tuple[str, Mapping[str, float] | None, int, int | None]:
    """``HybridIndex.search``'s fusion, weights, depth and rerank: the stack's when one is
    given, else the arguments; ``retrievers`` are the engine's legs.

    Raises
    ------
    ValueError
        A stack and any of those arguments away from its default (the call says two things),
        or a stack of other legs than ``retrievers``.
    """
    if stack is None:
        return fusion, weights, depth, rerank
    if stack.retrievers != retrievers:
        raise ValueError(
            f"the stack combines {list(stack.retrievers)}, this index {list(retrievers)}: "
            "build the index with HybridIndex.build(corpus, stack=stack)"
        )
    if (
        fusion != DEFAULT_METHOD
        or weights is not None
        or depth != DEFAULT_DEPTH
        or rerank is not None
    ):
        raise ValueError(
            "give either stack= or fusion/weights/depth/rerank, not both: the stack sets all "
            "four (use dataclasses.replace(stack, ...) to change one)"
        )
    return stack.fusion, stack.weights, stack.depth, stack.rerank


def build_retrievers(stack: Stack | None, retrievers: Sequence[str]) -> Sequence[str]:
    """``HybridIndex.build``'s retrievers: the stack's when one is given, else ``retrievers``.

    Raises
    ------
    ValueError
        A stack and retrievers other than the default.
    """
    if stack is None:
        return retrievers
    if tuple(retrievers) != DEFAULT_RETRIEVERS:
        raise ValueError("give either stack= or retrievers=, not both: the stack names the legs")
    return stack.retrievers
