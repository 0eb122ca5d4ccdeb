"""The metadata a self-query may filter on, declared by the caller."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

FIELD_TYPES = ("str", "int", "float", "bool")
"""Types a ``SchemaField`` may declare (``Filter.compile``'s schema types)."""


@dataclass(frozen=True)
class SchemaField:
    """One metadata field.

    Attributes
    ----------
    name : str
        The field's name in the documents' metadata.
    type : {"str", "int", "float", "bool"}
        Its type.
    values : tuple, optional
        The allowed values (a str field's categories, say); None: any of the type.
    range : (number, number), optional
        Inclusive bounds of a numeric field; None: unbounded.
    description : str
        Words for the prompt.
    """

    name: str
    type: str
    values: tuple[Any, ...] | None = None
    range: tuple[float, float] | None = None
    description: str = ""

    def __post_init__(self) -> None:
        if self.type not in FIELD_TYPES:
            raise ValueError(
                f"field {self.name!r} has type {self.type!r}; choose from {FIELD_TYPES}"
            )
        if self.range is not None and self.type not in ("int", "float"):
            raise ValueError(f"field {self.name!r}: a range needs type int or float")

    def allows(self, value: Any) -> bool:
        """Whether ``value`` is among ``values`` and within ``range`` (types are
        ``Filter.compile``'s to check)."""
        if self.values is not None and value not in self.values:
            return False
        if self.range is not None and isinstance(value, (int, float)):
            return bool(self.range[0] <= value <= self.range[1])
        return True

    def describe(self) -> str:
        """The prompt's line for the field."""
        words = f"- {self.name} ({self.type}"
        if self.values is not None:
            words += ": one of " + ", ".join(map(str, self.values))
        if self.range is not None:
            words += f": {self.range[0]:g} to {self.range[1]:g}"
        return words + ")" + (f" {self.description}" if self.description else "")

    def example(self) -> Any:
        """A value for the prompt's worked example."""
        if self.values:
            return self.values[0]
        if self.range is not None:
            low = self.range[0]
            return int(low) if self.type == "int" else float(low)
        return {"str": "x", "int": 1, "float": 1.0, "bool": True}[self.type]


@dataclass(frozen=True)
class MetadataSchema:
    """The fields a self-query may filter on.

    Attributes
    ----------
    fields : tuple of SchemaField
        At least one, distinct names.
    """

    fields: tuple[SchemaField, ...]

    def __post_init__(self) -> None:
        names = [f.name for f in self.fields]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"a schema needs at least one field and distinct names, got {names}")

    def field(self, name: str) -> SchemaField | None:
        """The field called ``name``, None if the schema has none."""
        return next((f for f in self.fields if f.name == name), None)

    @property
    def types(self) -> dict[str, str]:
        """Field name -> type, as ``Filter.compile``'s ``schema``."""
        return {f.name: f.type for f in self.fields}

    def describe(self) -> str:
        """The fields, one per line, for the prompt."""
        return "\n".join(f.describe() for f in self.fields)

    def example(self) -> tuple[str, str]:
        """A worked example for the prompt: a question naming the first two fields' example
        values, and its JSON filter."""
        chosen = {f.name: f.example() for f in self.fields[:2]}
        words = " and ".join(f"{name} {value}" for name, value in chosen.items())
        return f"documents with {words}", json.dumps(chosen)
