"""Rescoring the fused candidates by their metadata: a decay on a numeric or date field, and a
small arithmetic expression over the relevance and numeric fields (parsed with ``ast`` and
evaluated by walking its tree: no ``eval``).

Both run after fusion and ``min_score``, before reranking and MMR, and re-order the candidates
by the new score, which becomes the hits' score (``relevance`` keeps the fused one). The decay
functions are Elasticsearch's ``function_score`` ones (and Qdrant's): with ``d = max(0,
|value - origin| - offset)``,

- ``"linear"``: ``max(0, (s - d) / s)``, ``s = scale / (1 - decay)``;
- ``"exp"``: ``decay ** (d / scale)``;
- ``"gauss"``: ``decay ** ((d / scale) ** 2)``;

so the factor is 1 within ``offset`` of ``origin`` and ``decay`` at ``offset + scale``. A date
field holds ISO-8601 strings (``"2024-05-01"``, ``"2024-05-01T12:00:00+00:00"``); its origin is
one too, or ``"now"``, and ``scale`` and ``offset`` count days. A document without the field
gets the factor 1 (no decay), as in Elasticsearch.
"""

from __future__ import annotations

import ast
import datetime as dt
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hybrid_engine.protocols import FieldReader
from hybrid_engine.result import PAD_ID, SearchResult

FUNCTIONS = ("linear", "exp", "gauss")
"""Decay functions."""
_CALLS: dict[str, Callable[..., Any]] = {
    "min": np.minimum,
    "max": np.maximum,
    "abs": np.abs,
    "log": np.log,
    "exp": np.exp,
    "sqrt": np.sqrt,
}
_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.divide,
    ast.Pow: np.power,
}
_SCORE_NAMES = ("score", "fused", "decay")
"""The expression's own variables: the relevance, the fused score, the decay factor."""
_DAY = 86400.0


@dataclass(frozen=True)
class Decay:
    """A checked decay (``check_decay``; the module docstring defines the functions)."""

    field: str
    origin: float
    scale: float
    offset: float
    decay: float
    function: str
    dates: bool

    def factors(self, values: list[list[object]]) -> np.ndarray:
        """The factor of each document, from the field's values (the first one of a list;
        1 for a document without the field)."""
        out = np.ones(len(values))
        for i, held in enumerate(values):
            if held:
                x = _number(held[0], self.field, self.dates)
                d = max(0.0, abs(x - self.origin) - self.offset)
                out[i] = self._factor(d)
        return out

    def _factor(self, d: float) -> float:
        if self.function == "linear":
            s = self.scale / (1.0 - self.decay)
            return max(0.0, (s - d) / s)
        if self.function == "exp":
            return float(self.decay ** (d / self.scale))
        return float(self.decay ** ((d / self.scale) ** 2))


def check_decay(decay: object) -> Decay | None:
    """``decay`` (a dict: ``field``, ``origin``, ``scale``, optional ``offset`` 0, ``decay``
    0.5, ``function`` ``"gauss"``) checked; None stays None.

    Raises
    ------
    TypeError, ValueError
        A missing or unknown key, or a value of the wrong type or range; the message says
        which.
    """
    if decay is None:
        return None
    if not isinstance(decay, Mapping):
        raise TypeError(
            f"decay must be a dict like {{'field': 'year', 'origin': 2024, 'scale': 5}}, got "
            f"{decay!r}"
        )
    known = {"field", "origin", "scale", "offset", "decay", "function"}
    unknown = sorted(set(decay) - known)
    if unknown or not {"field", "origin", "scale"} <= set(decay):
        raise ValueError(
            f"decay takes field, origin and scale, and optionally offset, decay and function; "
            f"got {sorted(decay)}"
        )
    field, origin = decay["field"], decay["origin"]
    if not isinstance(field, str) or not field:
        raise TypeError(f"decay field must be a metadata field name, got {field!r}")
    dates = isinstance(origin, str)
    function = decay.get("function", "gauss")
    if function not in FUNCTIONS:
        raise ValueError(f"decay function must be one of {FUNCTIONS}, got {function!r}")
    scale = _positive(decay["scale"], "scale", strict=True)
    offset = _positive(decay.get("offset", 0.0), "offset", strict=False)
    factor = decay.get("decay", 0.5)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor < 1:
        raise ValueError(f"decay 'decay' must be a number in (0, 1), got {factor!r}")
    at = _origin(origin) if dates else _number(origin, "origin", dates=False)
    return Decay(field, at, scale, offset, float(factor), function, dates)


def _positive(value: object, name: str, *, strict: bool) -> float:
    number = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else -1
    if not math.isfinite(number) or number < 0 or (strict and number == 0):
        bound = "> 0" if strict else ">= 0"
        raise ValueError(f"decay {name} must be a finite number {bound}, got {value!r}")
    return number


def _origin(origin: str) -> float:
    if origin == "now":
        return dt.datetime.now(dt.UTC).timestamp() / _DAY
    return _days(origin, "origin")


def _days(text: str, where: str) -> float:
    """Days since 1970-01-01 UTC of an ISO-8601 date or date-time (naive: UTC)."""
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"decay {where} {text!r} is not an ISO-8601 date ('2024-05-01' or "
            "'2024-05-01T12:00:00+00:00')"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.timestamp() / _DAY


def _number(value: object, where: str, dates: bool) -> float:
    if dates:
        if not isinstance(value, str):
            raise TypeError(f"decay on date field {where!r} found {value!r}, not a date string")
        return _days(value, f"field {where!r} value")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise TypeError(f"{where!r} holds {value!r}, not a finite number")
    return float(value)


@dataclass(frozen=True)
class Expression:
    """A checked expression (``check_expression``): its tree and the fields it reads."""

    text: str
    tree: ast.Expression
    fields: tuple[str, ...]

    def evaluate(self, variables: Mapping[str, np.ndarray]) -> np.ndarray:
        """The expression over arrays of one value per document."""
        with np.errstate(all="ignore"):
            return np.asarray(_evaluate(self.tree.body, variables), dtype=np.float64)


def check_expression(expression: object) -> Expression | None:
    """``expression`` parsed and checked: numbers, the variables ``score`` (the relevance,
    [0, 1]), ``fused`` (the fused score), ``decay`` (the decay factor, 1 without a decay) and
    numeric metadata fields by name (0 for a document without the field; the first item of
    a list), ``+ - * / **``, unary minus, and ``min``, ``max``, ``abs``, ``log``, ``exp``,
    ``sqrt`` (with at least one argument); None stays None.

    Raises
    ------
    TypeError, ValueError
        Not a string, a syntax error, or anything else (attributes, subscripts,
        comparisons, other calls): the message names it.
    """
    if expression is None:
        return None
    if not isinstance(expression, str) or not expression.strip():
        raise TypeError(
            f"expression must be a formula string like 'score * decay', got {expression!r}"
        )
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"expression {expression!r} is not a formula: {exc.msg}") from None
    names: list[str] = []
    for node in ast.walk(tree.body):
        _check_node(node, expression)
        if isinstance(node, ast.Name) and node.id not in _CALLS:
            names.append(node.id)
    fields = tuple(dict.fromkeys(n for n in names if n not in _SCORE_NAMES))
    return Expression(expression, tree, fields)


def _check_node(node: ast.AST, text: str) -> None:
    allowed: tuple[type, ...] = (ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Call)
    allowed += (ast.Load, *_OPERATORS, ast.USub, ast.UAdd)
    if not isinstance(node, allowed):
        raise ValueError(
            f"expression {text!r} uses {type(node).__name__}: only numbers, names, "
            "+ - * / **, and min, max, abs, log, exp, sqrt are allowed"
        )
    if isinstance(node, ast.Constant) and (
        isinstance(node.value, bool) or not isinstance(node.value, (int, float))
    ):
        raise ValueError(f"expression {text!r} holds {node.value!r}: only numbers are allowed")
    if isinstance(node, ast.Call) and (
        not isinstance(node.func, ast.Name)
        or node.func.id not in _CALLS
        or node.keywords
        or not node.args
    ):
        raise ValueError(
            f"expression {text!r} calls {ast.unparse(node.func)}: only min, max, abs, log, "
            "exp and sqrt, with plain arguments"
        )


def _evaluate(node: ast.AST, variables: Mapping[str, np.ndarray]) -> Any:
    if isinstance(node, ast.Constant):
        assert isinstance(node.value, (int, float))  # _check_node saw to it
        return float(node.value)
    if isinstance(node, ast.Name):
        if node.id not in variables:  # a function's name used as a value
            raise ValueError(f"expression uses {node.id!r} as a value; call it: {node.id}(...)")
        return variables[node.id]
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, variables)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        operator = _OPERATORS[type(node.op)]
        return operator(_evaluate(node.left, variables), _evaluate(node.right, variables))
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    arguments = [_evaluate(argument, variables) for argument in node.args]
    function = _CALLS[node.func.id]
    if function in (np.minimum, np.maximum):
        return _reduce(function, arguments)
    return function(*arguments)


def _reduce(function: Callable[[Any, Any], Any], arguments: list[Any]) -> Any:
    """``min``/``max`` of one or more arguments, element-wise."""
    out = arguments[0]
    for argument in arguments[1:]:
        out = function(out, argument)
    return out


def rescore(
    snapshot: FieldReader,
    result: SearchResult,
    relevance: np.ndarray,
    decay: Decay | None,
    expression: Expression | None,
) -> SearchResult:
    """``result`` (fused, rows in relevance order) re-scored and re-ordered, row by row: by
    ``expression`` when given, else by ``relevance * decay factor``.

    Raises
    ------
    TypeError
        A decayed or computed-with field holds a value that is not a number (or a date
        string, for a date decay).
    ValueError
        The expression gives a non-finite value (a division by zero, the log of 0): the
        message names the document.
    """
    ids = result.ids.copy()
    scores = np.full(ids.shape, -np.inf, np.float32)
    for row in range(len(ids)):
        hit = ids[row] != PAD_ID
        positions = ids[row][hit]
        if len(positions) == 0:
            continue
        factors = (
            decay.factors(snapshot.field_values(decay.field, positions))
            if decay is not None
            else np.ones(len(positions))
        )
        values = relevance[row][hit].astype(np.float64) * factors
        if expression is not None:
            variables = {
                "score": relevance[row][hit].astype(np.float64),
                "fused": result.scores[row][hit].astype(np.float64),
                "decay": factors,
            }
            for name in expression.fields:
                variables[name] = np.array(
                    [
                        _number(held[0], name, dates=False) if held else 0.0
                        for held in snapshot.field_values(name, positions)
                    ]
                )
            values = np.broadcast_to(expression.evaluate(variables), positions.shape)
            bad = ~np.isfinite(values)
            if bad.any():
                doc = snapshot.doc_ids_at(positions[bad][:1])[0]
                raise ValueError(
                    f"expression {expression.text!r} gives {values[bad][0]} for document "
                    f"{doc!r} (a division by zero, or the log of a number <= 0?)"
                )
        order = np.argsort(-values, kind="stable")
        ids[row, : len(positions)] = positions[order]
        scores[row, : len(positions)] = values[order]
    return SearchResult(ids, scores)
