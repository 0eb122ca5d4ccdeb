"""The settings every segment of a live engine is built with, fixed when the engine is made."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from hybrid_engine.checks import check_int
from hybrid_engine.lexical.analysis import AnalyzerConfig
from hybrid_engine.lexical.params import BM25Params

ModelRecord = dict[str, str] | None
"""``{"name", "variant"}`` of a prepared model a leg runs, None for an encoder of the user's."""


@dataclass(frozen=True)
class EngineConfig:
    """What each new segment is built with, so that all of them score alike.

    Attributes
    ----------
    retrievers : tuple of str
        The legs, in ``pipeline.legs.RETRIEVERS`` order.
    bm25 : dict
        ``BM25Index.build`` keyword arguments (``k1``, ``b``, ``method``, ``delta``,
        ``analyzer``, ``positions``), and ``title_weight`` (``title_weight``).
    dense : dict
        ``DenseIndex.build`` keyword arguments (``metric``, ``m``, ``ef_construction``,
        ``ef_search``, ``exact_threshold``, ``batch_size``).
    splade_scale : float or None
        The SPLADE quantization scale of every segment: the first segment's, so that later
        ones never change the scores of earlier ones (None until a SPLADE segment exists).
    models : dict
        The prepared model of each model leg (``"dense"``, ``"splade"``), recorded for
        ``load``.
    """

    retrievers: tuple[str, ...]
    bm25: dict[str, Any] = field(default_factory=dict)
    dense: dict[str, Any] = field(default_factory=dict)
    splade_scale: float | None = None
    models: dict[str, ModelRecord] = field(default_factory=dict)

    @property
    def title_weight(self) -> int:
        """How many times the BM25 leg counts a document's title: its words' frequencies are
        multiplied by it, and the document's length grows by the extra copies (BM25F with
        one ``b`` for both fields, in the weighted term-frequency form of Robertson,
        Zaragoza and Taylor 2004). 1: title and text as one field."""
        return int(self.bm25.get("title_weight", 1))

    @property
    def bm25_build(self) -> dict[str, Any]:
        """``BM25Index.build``'s keyword arguments: ``bm25`` without ``title_weight``."""
        return {key: value for key, value in self.bm25.items() if key != "title_weight"}

    def bm25_texts(self, titles: Iterable[str], texts: Iterable[str]) -> list[str]:
        """What the BM25 leg indexes of documents with these ``titles`` and indexed
        ``texts`` (title, a space, text): each text with ``title_weight - 1`` more copies of
        its title in front."""
        extra = self.title_weight - 1
        if extra == 0:
            return list(texts)
        return [
            (title + " ") * extra + text if title else text
            for title, text in zip(titles, texts, strict=True)
        ]

    def with_splade_scale(self, scale: float) -> EngineConfig:
        return replace(self, splade_scale=float(scale))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the analyzer as its dict)."""
        bm25 = dict(self.bm25)
        if "analyzer" in bm25:
            bm25["analyzer"] = bm25["analyzer"].to_dict()
        return {
            "retrievers": list(self.retrievers),
            "bm25": bm25,
            "dense": dict(self.dense),
            "splade_scale": self.splade_scale,
            "models": dict(self.models),
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> EngineConfig:
        """The config ``to_dict`` wrote; KeyError, TypeError or ValueError when malformed."""
        bm25 = dict(values["bm25"])
        if "analyzer" in bm25:
            bm25["analyzer"] = AnalyzerConfig.from_dict(bm25["analyzer"])
        params = {key: bm25[key] for key in ("k1", "b", "method", "delta") if key in bm25}
        BM25Params(**params)  # raises on bad values
        if "title_weight" in bm25:
            check_title_weight(bm25["title_weight"])
        if "positions" in bm25:
            check_positions(bm25["positions"])
        scale = values["splade_scale"]
        if scale is not None and not (isinstance(scale, (int, float)) and scale > 0):
            raise ValueError(f"splade_scale is {scale!r}")
        models = values["models"]
        if not isinstance(models, dict):
            raise TypeError(f"models is {type(models).__name__}")
        return cls(
            retrievers=tuple(values["retrievers"]),
            bm25=bm25,
            dense=dict(values["dense"]),
            splade_scale=None if scale is None else float(scale),
            models=dict(models),
        )


MAX_TITLE_WEIGHT = 10
"""The largest ``title_weight``."""


def check_title_weight(weight: object) -> int:
    """``weight`` when an int in ``[1, MAX_TITLE_WEIGHT]``; ValueError otherwise."""
    return check_int("bm25_options['title_weight']", weight, 1, MAX_TITLE_WEIGHT)


def check_positions(positions: object) -> bool:
    """``positions`` when True or False; TypeError otherwise."""
    if not isinstance(positions, bool):
        raise TypeError(f"bm25_options['positions'] must be True or False, got {positions!r}")
    return positions
