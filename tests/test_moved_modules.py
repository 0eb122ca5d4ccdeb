"""Old module paths (``hybrid_engine._moved.MOVED``) still import: each is the very module at
its new path, with a ``DeprecationWarning`` that names the new path; and nothing of ours
imports an old path."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from hybrid_engine._moved import MOVED, MOVED_NAMES, MovedModuleFinder, install_moved_modules

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("hybrid_engine", "tests", "scripts", "benchmarks")


def forget(name: str) -> None:
    """Drop ``name`` from ``sys.modules`` and from its package, so the next import finds it."""
    sys.modules.pop(name, None)
    package, _, child = name.rpartition(".")
    if package in sys.modules and child in vars(sys.modules[package]):
        delattr(sys.modules[package], child)


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_old_path_is_the_new_module(old: str, new: str) -> None:
    forget(old)
    with pytest.warns(DeprecationWarning, match=rf"{old} is deprecated: import {new} instead"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new
    assert module.__spec__ is not None and module.__spec__.name == new
    # A second import finds it in sys.modules: same object, no second warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert importlib.import_module(old) is module


@pytest.mark.parametrize("new", sorted(set(MOVED.values())))
def test_new_path_is_a_module_file(new: str) -> None:
    """Each new name is a real module, not itself an alias, at the file its name says."""
    assert new not in MOVED
    module = importlib.import_module(new)
    assert module.__file__ is not None
    assert Path(module.__file__) == ROOT.joinpath(*new.split(".")).with_suffix(".py")


@pytest.mark.parametrize("old", sorted(MOVED))
def test_old_path_has_no_file(old: str) -> None:
    """The old file is gone, so only the alias can answer its name."""
    assert not ROOT.joinpath(*old.split(".")).with_suffix(".py").exists()


def test_import_statements_of_old_paths() -> None:
    """``import a.b as m``, ``from a import b`` and ``from a.b import name`` all work, and the
    warning points at the importing line (so Python's default filter shows it in
    ``__main__``). Run in a fresh interpreter, so every old path is imported for the first
    time."""
    script = """
import warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import hybrid_engine.lexical.bm25_format as m
    from hybrid_engine.lexical import bm25_params
    from hybrid_engine.results import SearchResult
    from hybrid_engine.parents.results import ParentHit
    from hybrid_engine.live.snapshot import Hit
import hybrid_engine.lexical.format
import hybrid_engine.lexical.params
import hybrid_engine.parents.result
import hybrid_engine.result
assert m is hybrid_engine.lexical.format
assert bm25_params is hybrid_engine.lexical.params
assert SearchResult is hybrid_engine.SearchResult
assert ParentHit is hybrid_engine.parents.result.ParentHit
assert Hit is hybrid_engine.result.Hit is hybrid_engine.Hit
found = [(w.category.__name__, str(w.message), w.filename) for w in caught]
assert [c for c, _, _ in found] == ["DeprecationWarning"] * 4, found
assert all(f == "<string>" for _, _, f in found), found
print("\\n".join(m for _, m, _ in found))
"""
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == [
        "hybrid_engine.lexical.bm25_format is deprecated: import hybrid_engine.lexical.format "
        "instead",
        "hybrid_engine.lexical.bm25_params is deprecated: import hybrid_engine.lexical.params "
        "instead",
        "hybrid_engine.results is deprecated: import hybrid_engine.result instead",
        "hybrid_engine.parents.results is deprecated: import hybrid_engine.parents.result instead",
    ]


@pytest.mark.parametrize(
    ("package", "name", "new"),
    sorted((p, n, new) for p, names in MOVED_NAMES.items() for n, new in names.items()),
)
def test_old_package_name_is_the_new_object(package: str, name: str, new: str) -> None:
    """``from hybrid_engine.pipeline import HybridIndex`` still gives the class, warning once
    a lookup with the new module's name; the package no longer defines it itself."""
    module = importlib.import_module(package)
    assert name not in vars(module)
    with pytest.warns(
        DeprecationWarning, match=rf"{package}.{name} is deprecated: import it from {new}"
    ):
        moved = getattr(module, name)
    assert moved is getattr(importlib.import_module(new), name)
    with pytest.raises(AttributeError, match=rf"module '{package}' has no attribute 'nothing'"):
        getattr(module, "nothing")  # noqa: B009 - the missing name goes through __getattr__


def test_finder_answers_only_old_names() -> None:
    # Installed (other libraries may put their own finders before it later: it answers only
    # names whose files are gone, which no other finder finds).
    finder = next(f for f in sys.meta_path if isinstance(f, MovedModuleFinder))
    assert finder.find_spec("hybrid_engine.result") is None
    assert finder.find_spec("json") is None
    install_moved_modules()  # a second install adds no second finder
    assert sum(isinstance(f, MovedModuleFinder) for f in sys.meta_path) == 1


def imported_modules(file: Path) -> set[str]:
    """Every module name an ``import`` or ``from ... import`` in ``file`` may import, the
    ``from a import b`` form counted both as ``a`` and as ``a.b``."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_nothing_of_ours_imports_an_old_path() -> None:
    """Old paths are for users' code only; ``import_module("...")`` strings are checked too."""
    this = Path(__file__).resolve()
    offenders = []
    for source in SOURCES:
        for file in sorted((ROOT / source).rglob("*.py")):
            if file.resolve() == this or file.name == "_moved.py":
                continue
            text = file.read_text(encoding="utf-8")
            old = sorted(imported_modules(file) & MOVED.keys())
            old += sorted(name for name in MOVED if f'"{name}"' in text or f"'{name}'" in text)
            old += sorted(
                f"{package}.{name}"
                for package, names in MOVED_NAMES.items()
                for name in names
                if f"{package}.{name}" in imported_modules(file)
            )
            offenders += [f"{file.relative_to(ROOT)}: {name}" for name in old]
    assert not offenders, offenders
