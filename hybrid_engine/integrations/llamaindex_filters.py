"""LlamaIndex ``MetadataFilters`` in the engine's filter dialect (docs/filters.md).

``to_engine_filter`` maps each operator to the engine operator of the same meaning, and
refuses the operators the dialect cannot express exactly. The reference meaning is that of
LlamaIndex's in-memory ``SimpleVectorStore`` on scalar fields (a missing field or a ``None``
value matches only ``NE`` and ``NIN``, as the engine's ``$ne``/``$nin`` do). On list fields
the engine's rule holds: an operator holds when some item passes it (Mongo's, Pinecone's and
Chroma's rule, and LlamaIndex's own ``CONTAINS``/``ANY``/``ALL``); ``SimpleVectorStore``
compares the whole list there. Bools compare only with bools (``True`` is not ``1``).

| LlamaIndex | engine |
|---|---|
| ``EQ`` ``NE`` ``GT`` ``GTE`` ``LT`` ``LTE`` | ``$eq`` ``$ne`` ``$gt`` ``$gte`` ``$lt`` ``$lte`` |
| ``IN`` ``NIN`` [v, ...] | ``$in`` ``$nin`` [v, ...] |
| ``CONTAINS`` v (a list field holds v) | ``$eq`` v (on a list field: an item equals v) |
| ``ANY`` [v, ...] (a list field holds one) | ``$in`` [v, ...] |
| ``ALL`` [v, ...] (a list field holds each) | ``$and`` of ``$eq`` v, one per value |
| ``TEXT_MATCH``, ``TEXT_MATCH_INSENSITIVE`` | refused: no substring match in the dialect |
| ``IS_EMPTY`` | refused: ``""`` and ``[""]`` are not told apart |
| ``AND`` ``OR`` ``NOT`` of filters | ``$and`` ``$or`` ``$not`` of ``$or`` (none holds) |

``CONTAINS``, ``ANY`` and ``ALL`` on a *str* field test equality here, where
``SimpleVectorStore`` tests a substring (its ``in`` on a str): they are list operators.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.vector_stores import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

__all__ = ["to_engine_filter"]

_SCALAR = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.CONTAINS: "$eq",
}
"""Operators of one value, and their engine operator."""

_LIST = {FilterOperator.IN: "$in", FilterOperator.NIN: "$nin", FilterOperator.ANY: "$in"}
"""Operators of a list of values (besides ``ALL``), and their engine operator."""

_REFUSED = {
    FilterOperator.TEXT_MATCH: "the engine's filters have no substring or text match",
    FilterOperator.TEXT_MATCH_INSENSITIVE: "the engine's filters have no substring or text match",
    FilterOperator.IS_EMPTY: (
        'the engine\'s filters cannot tell a "" value from a [""] list (and $exists '
        'false leaves out None, "" and [])'
    ),
}
"""Operators the dialect cannot express exactly, and why."""


def to_engine_filter(filters: MetadataFilters) -> dict[str, Any]:
    """The engine filter (docs/filters.md) equivalent to LlamaIndex ``filters``.

    Parameters
    ----------
    filters : MetadataFilters
        ``MetadataFilter``\\ s and nested ``MetadataFilters`` under a ``condition`` (None is
        ``AND``). An empty one matches every document (as in ``SimpleVectorStore``).

    Returns
    -------
    dict
        ``{}`` for no filters, else ``{"$and" | "$or": [...]}`` or ``{"$not": {"$or": [...]}}``,
        one entry per filter (the module docstring has the table).

    Raises
    ------
    ValueError
        An operator the dialect cannot express (named, with the reason), a ``None`` value,
        ``ALL`` with no values, or an unknown condition.
    TypeError
        ``filters`` is not a ``MetadataFilters``, or a list operator given one value (or a
        one-value operator given a list).
    """
    if not isinstance(filters, MetadataFilters):
        raise TypeError(
            f"filters must be a llama_index MetadataFilters, got {type(filters).__name__}"
        )
    parts = [
        to_engine_filter(f) if isinstance(f, MetadataFilters) else _one(f) for f in filters.filters
    ]
    if not parts:
        return {}
    condition = filters.condition or FilterCondition.AND
    if condition == FilterCondition.AND:
        return {"$and": parts}
    if condition == FilterCondition.OR:
        return {"$or": parts}
    if condition == FilterCondition.NOT:
        return {"$not": {"$or": parts}}
    raise ValueError(f"unknown FilterCondition {condition!r}; use AND, OR or NOT")


def _one(f: MetadataFilter) -> dict[str, Any]:
    """The engine filter of one ``MetadataFilter``."""
    operator, value = FilterOperator(f.operator), f.value
    if operator in _REFUSED:
        raise ValueError(
            f"FilterOperator.{operator.name} (key {f.key!r}) cannot be translated: "
            f"{_REFUSED[operator]}; filter on another operator or after retrieval"
        )
    if value is None:
        raise ValueError(
            f"FilterOperator.{operator.name} on key {f.key!r} has the value None, which "
            "LlamaIndex's stores read differently; compare with a value"
        )
    if operator in _SCALAR:
        if isinstance(value, list):
            raise TypeError(
                f"FilterOperator.{operator.name} on key {f.key!r} takes one value, got the "
                f"list {value!r}; use IN or ANY for one of several values"
            )
        return {f.key: {_SCALAR[operator]: value}}
    if not isinstance(value, list):
        raise TypeError(
            f"FilterOperator.{operator.name} on key {f.key!r} takes a list of values, got "
            f"{value!r}; wrap it in a list"
        )
    if operator in _LIST:
        return {f.key: {_LIST[operator]: list(value)}}
    if operator == FilterOperator.ALL:
        if not value:
            raise ValueError(
                f"FilterOperator.ALL on key {f.key!r} has no values; give at least one"
            )
        return {"$and": [{f.key: {"$eq": v}} for v in value]}
    raise ValueError(f"unknown FilterOperator {operator!r} on key {f.key!r}")
