"""Self-query: a generator proposes a metadata filter for the question, which is validated
against the engine's filter dialect and a declared schema, and applied only when valid."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hybrid_engine.checks import check_queries
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.errors import SelfQueryWarning
from hybrid_engine.metadata import Filter
from hybrid_engine.pipeline.fusion import DEFAULT_METHOD
from hybrid_engine.pipeline.stack import DEFAULT_DEPTH
from hybrid_engine.result import SearchResult
from hybrid_engine.strategies.parsing import json_object
from hybrid_engine.strategies.prompts import PROMPTS, Prompts
from hybrid_engine.strategies.result import (
    Generate,
    QueryTrace,
    StrategyResult,
    run_per_query,
)
from hybrid_engine.strategies.schema import MetadataSchema


@dataclass(frozen=True)
class ProposedFilter:
    """What a self-query made of the generator's output.

    Attributes
    ----------
    raw : str
        The output.
    spec : dict or None
        The parsed JSON object (None when it did not parse).
    valid : bool
        Whether ``spec`` passed ``Filter.compile`` with the schema's types and the schema's
        allowed values and ranges. An empty ``{}`` is valid and filters nothing.
    reason : str or None
        Why it is invalid.
    """

    raw: str
    spec: dict[str, Any] | None
    valid: bool
    reason: str | None = None


def _operands(spec: Any) -> list[tuple[str, Any]]:
    """(field, value) of every comparison in a filter spec (compiled already, so well formed)."""
    out: list[tuple[str, Any]] = []
    for key, value in spec.items():
        if key in ("$and", "$or"):
            for part in value:
                out.extend(_operands(part))
        elif key == "$not":
            out.extend(_operands(value))
        elif isinstance(value, dict):
            for op, operand in value.items():
                if op == "$not":
                    out.extend(_operands({key: operand}))
                elif op != "$exists":
                    items = operand if isinstance(operand, list) else [operand]
                    out.extend((key, item) for item in items)
        else:
            out.append((key, value))
    return out


def validate_filter(raw: str, schema: MetadataSchema) -> ProposedFilter:
    """Parse the generator's ``raw`` output as a filter and validate it against ``schema``:
    malformed JSON, an unknown field, a wrong type, an operator outside the dialect or a value
    the schema does not allow make it invalid (``reason`` says which)."""
    try:
        spec = json_object(raw)
    except ValueError as error:
        return ProposedFilter(raw, None, False, str(error))
    try:
        Filter.compile(spec, schema.types)
    except (ValueError, TypeError) as error:
        return ProposedFilter(raw, spec, False, str(error))
    for name, value in _operands(spec):
        field = schema.field(name)
        if field is not None and value is not None and not field.allows(value):
            return ProposedFilter(
                raw, spec, False, f"{value!r} is not an allowed value of {name!r}"
            )
    return ProposedFilter(raw, spec, True)


def self_query(
    engine: HybridIndex,
    queries: str | Sequence[str],
    generate: Generate,
    schema: MetadataSchema,
    k: int = 10,
    *,
    prompts: Prompts = PROMPTS,
    fusion: str = DEFAULT_METHOD,
    depth: int = DEFAULT_DEPTH,
) -> StrategyResult:
    """Search each query with the filter the generator proposes, when it validates.

    An invalid proposal (``validate_filter``) is dropped with a ``SelfQueryWarning`` naming
    why, never applied in part; the query then runs unfiltered.

    Parameters
    ----------
    engine : HybridIndex
        Its documents' metadata carry ``schema``'s fields.
    queries : str or sequence of str
        A blank query gets no hits and no generation.
    generate : callable str -> str
        Called once per query with ``prompts.self_query``.
    schema : MetadataSchema
        The fields the filter may use.
    k : int
        Hits per query.
    prompts : Prompts
        ``prompts.self_query`` is used.
    fusion, depth
        As in ``HybridIndex.search``.

    Returns
    -------
    StrategyResult
        ``generated["self-query"]``: the ``ProposedFilter`` (None for a blank query); one
        step, ``"filtered"`` or ``"unfiltered"``.
    """
    texts = check_queries(queries)
    example_question, example_filter = schema.example()

    def search_one(engine: HybridIndex, query: str, trace: QueryTrace) -> SearchResult:
        proposal = None
        if query.strip():
            prompt = prompts.self_query.format(
                schema=schema.describe(),
                example_question=example_question,
                example_filter=example_filter,
                question=query,
            )
            raw = trace.timed("self-query.generation", generate, prompt)
            proposal = validate_filter(raw, schema)
            if not proposal.valid:
                warnings.warn(
                    f"dropped the generated filter for {query!r}: {proposal.reason}",
                    SelfQueryWarning,
                    stacklevel=2,
                )
        trace.generated["self-query"] = proposal
        where = proposal.spec if proposal is not None and proposal.valid and proposal.spec else None
        label = "filtered" if where else "unfiltered"
        return trace.search(
            "self-query",
            label,
            query,
            engine.search,
            [query],
            k,
            fusion=fusion,
            depth=depth,
            filter=where,
        )

    return run_per_query(engine, texts, search_one, k)
