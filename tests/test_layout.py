"""The package's layout (docs/layout.md's table): each folder imports only the folders its row
allows, the permissions stack in floors, and no module imports itself back through others (no
cycles). Read from the source with ``ast``, so a lazy
import inside a function counts too."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hybrid_engine"
LAYOUT = PACKAGE.parent / "docs" / "layout.md"


def layout_table() -> tuple[set[str], dict[str, set[str]]]:
    """docs/layout.md's table: the leaf modules (its first row) and, for every folder, the
    folders it may import (``leaf`` standing for the leaves)."""
    leaves: set[str] = set()
    allowed: dict[str, set[str]] = {}
    for line in LAYOUT.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith(("leaves:", "`")):
            continue
        names = re.findall(r"`([^`]+)`", cells[0])
        may = set(re.findall(r"`([^`]+)`", cells[2]))
        if cells[2].startswith("leaves"):
            may.add("leaf")
        if cells[0].startswith("leaves:"):
            leaves, folder = set(names), "leaf"
        else:
            (folder,) = names
        allowed[folder] = may - {folder}  # a folder's own modules import each other
    return leaves, allowed


LEAVES, ALLOWED = layout_table()


def part(module: str) -> str:
    """``hybrid_engine.dense.index`` -> ``dense``; top-level leaves -> ``leaf``."""
    name = module.split(".")[1] if "." in module else ""
    return "leaf" if name in LEAVES or name == "" else name


def modules() -> dict[str, set[str]]:
    """Each module of the package and the package modules it imports."""
    graph: dict[str, set[str]] = {}
    for file in PACKAGE.rglob("*.py"):
        parts = file.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        graph[name] = set()
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hybrid_engine"):
                # ``from package import submodule`` imports the submodule, a name the package.
                graph[name].update(f"{node.module}.{a.name}|{node.module}" for a in node.names)
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name.startswith("hybrid_engine"))
    known = set(graph) | {"hybrid_engine._core"}

    def resolve(target: str) -> str:
        submodule, _, base = target.partition("|")
        return submodule if submodule in known or not base else base

    return {
        name: {m for m in map(resolve, deps) if m in known and m != name}
        for name, deps in graph.items()
    }


GRAPH = modules()


def test_the_table_names_every_folder_once() -> None:
    tops = {
        file.name.split(".")[0]
        for file in PACKAGE.iterdir()
        if (file.suffix in (".py", ".so") or (file / "__init__.py").exists())
        and file.name != "__init__.py"
    }
    assert tops == LEAVES | (set(ALLOWED) - {"leaf"}), "docs/layout.md's table and the package"
    for folder, may in ALLOWED.items():
        assert may <= set(ALLOWED) - {folder}, (folder, may - set(ALLOWED))


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m != "hybrid_engine"))
def test_imports_only_what_the_layout_allows(module: str) -> None:
    own = part(module)
    outside = sorted(
        m
        for m in GRAPH[module]
        if m != "hybrid_engine" and part(m) != own and part(m) not in ALLOWED[own]
    )
    assert not outside, f"{module} imports what docs/layout.md does not allow {own}: {outside}"


def test_no_cycle_between_folders() -> None:
    """The table's permissions form no cycle, so the folders stack in floors."""
    done: set[str] = set()

    def visit(folder: str, path: list[str]) -> None:
        for dep in sorted(ALLOWED[folder]):
            assert dep not in path, f"import cycle in docs/layout.md: {' -> '.join([*path, dep])}"
            if dep not in done:
                visit(dep, [*path, dep])
        done.add(folder)

    for folder in sorted(ALLOWED):
        visit(folder, [folder])


def test_no_import_cycles() -> None:
    """Depth-first search over the module imports."""
    graph = {m: {d for d in deps if GRAPH.get(d) is not None} for m, deps in GRAPH.items()}
    state: dict[str, int] = {}  # 1: on the stack, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for dep in sorted(graph[module]):
            if state.get(dep) == 1:
                raise AssertionError(f"import cycle: {' -> '.join([*path, dep])}")
            if state.get(dep) is None:
                visit(dep, [*path, dep])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
