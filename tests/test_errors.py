"""One place for the package's errors and warnings (issue 30): every exception type of
``hybrid_engine.errors`` derives from ``HybridEngineError`` and keeps the built-in base a caller
catches, every warning type derives from ``UserWarning``, all are exported by
``hybrid_engine``, and the modules that first defined them still export the same objects."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import hybrid_engine
from hybrid_engine import errors

BUILT_IN_BASES = {
    "BatcherFullError": RuntimeError,
    "DatasetError": ValueError,
    "DegradedEngineError": RuntimeError,
    "DuplicateIdError": ValueError,
    "EncoderRefusedError": Exception,
    "IndexFormatError": ValueError,
    "ModelNotFoundError": FileNotFoundError,
    "PinnedEngineError": RuntimeError,
    "ShardUnavailableError": RuntimeError,
    "StageError": RuntimeError,
    "UnknownIdError": KeyError,
    "UnpreparedGenerationError": LookupError,
    "WriterLockedError": RuntimeError,
}
"""The built-in type each error was caught as before it moved (and the docs name)."""
OLD_PATHS = [
    ("hybrid_engine.server.batching", "BatcherFullError"),
    ("hybrid_engine.evaluation", "DatasetError"),
    ("hybrid_engine.evaluation.datasets", "DatasetError"),
    ("hybrid_engine.training", "EncoderRefusedError"),
    ("hybrid_engine.training.encoder_trainer", "EncoderRefusedError"),
    ("hybrid_engine.models", "ModelNotFoundError"),
    ("hybrid_engine.models.store", "ModelNotFoundError"),
    ("hybrid_engine.distributed", "ShardUnavailableError"),
    ("hybrid_engine.distributed.cluster", "ShardUnavailableError"),
    ("hybrid_engine.distributed.worker", "UnpreparedGenerationError"),
    ("hybrid_engine.pipeline", "DegradedWarning"),
    ("hybrid_engine.pipeline.degradation", "DegradedWarning"),
    ("hybrid_engine.engine.index", "RerankerRefusedWarning"),
    ("hybrid_engine.models", "RefusedModelWarning"),
    ("hybrid_engine.models.bi_encoder", "RefusedModelWarning"),
    ("hybrid_engine.models.export.common", "Int8DroppedWarning"),
    ("hybrid_engine.strategies", "SelfQueryWarning"),
    ("hybrid_engine.strategies.self_query", "SelfQueryWarning"),
]
"""Where users may import them from: the modules that defined them first."""


def defined() -> dict[str, type]:
    return {
        name: value
        for name, value in vars(errors).items()
        if inspect.isclass(value) and value.__module__ == errors.__name__
    }


def test_every_error_is_a_hybrid_engine_error_with_its_built_in_base() -> None:
    found = {n: c for n, c in defined().items() if not issubclass(c, Warning)}
    assert set(found) == {"HybridEngineError", *BUILT_IN_BASES}
    for name, kind in BUILT_IN_BASES.items():
        assert issubclass(found[name], errors.HybridEngineError), name
        assert issubclass(found[name], kind), name


def test_every_warning_is_a_user_warning() -> None:
    warnings = {n: c for n, c in defined().items() if issubclass(c, Warning)}
    assert len(warnings) == 5
    assert all(issubclass(c, UserWarning) for c in warnings.values())


def test_every_error_and_warning_is_exported_by_the_package() -> None:
    for name, kind in defined().items():
        assert name in hybrid_engine.__all__, name
        assert getattr(hybrid_engine, name) is kind


@pytest.mark.parametrize(("module", "name"), OLD_PATHS)
def test_the_old_import_paths_give_the_same_type(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is getattr(errors, name)


def test_no_exception_or_warning_type_is_defined_outside_errors() -> None:
    """Every exception and warning class of the package is defined in ``errors.py``."""
    root = Path(hybrid_engine.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "errors.py" and path.parent == root:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {getattr(b, "id", getattr(b, "attr", "")) for b in node.bases}
                if any(b.endswith(("Error", "Exception", "Warning")) for b in bases):
                    found.append(f"{path.relative_to(root)}:{node.name}")
    assert not found
