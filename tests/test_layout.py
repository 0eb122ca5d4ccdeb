"""The package's floors: each subpackage imports only from the floors below it, and no module
imports itself back through others (no cycles). Read from the source with ``ast``, so a lazy
import inside a function counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hybrid_engine"
LEAVES = {
    "_core",
    "_moved",  # old module paths, answered with the modules at their new names
    "_threads",
    "_version",
    "checks",
    "compressed",  # strings compressed in zstandard blocks (a segment's texts and titles)
    "corpus",
    "errors",
    "ids",  # the one rule for a document id, and the ids the engine generates
    "metadata",  # document metadata columns and filters (numpy over errors, packed, storage)
    "packed",
    "progress",
    "protocols",
    "result",  # the result types: SearchResult, SparseVectors, Hit
    "storage",
}
FLOORS = {
    "leaf": 0,
    "models": 1,
    "generation": 1,  # a local text generator (llama.cpp) behind generate(prompt) -> str
    "lexical": 2,
    "dense": 2,
    "chunking": 2,  # sentences packed into token-budget chunks, in the bi-encoder's tokenizer
    "sparse": 3,  # scores through lexical's posting-list searcher
    "feedback": 3,  # pseudo-relevance feedback over a lexical or a dense index
    "live": 4,  # segments of every leg, snapshots, commits
    "pipeline": 5,  # the query stages: legs, plan, fusion, rescoring, rerank, MMR, budgets
    "engine": 6,  # HybridIndex: the stages run over a live collection, its lifecycle and format
    "parents": 7,  # parent documents indexed as chunks in the engine (composes HybridIndex)
    "strategies": 7,  # query strategies through a generator (HyDE, decompose, ...) over the engine
    "evaluation": 7,
    "distributed": 7,  # live engines as shards on Ray actors, searched as one (composes them)
    "training": 8,
    "server": 9,  # the HTTP server over the public API; only the cli's serve imports it
    "cli": 9,
    "integrations": 9,  # LangChain and LlamaIndex adapters over the public API; nothing imports it
    "__main__": 9,
}
"""Floor of each part; a module may import from its own part and from lower floors."""


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


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if m != "hybrid_engine"))
def test_imports_only_from_lower_floors(module: str) -> None:
    floor = FLOORS[part(module)]
    upward = sorted(
        m
        for m in GRAPH[module]
        if m != "hybrid_engine" and FLOORS[part(m)] > floor and part(m) != part(module)
    )
    assert not upward, f"{module} imports from higher floors: {upward}"


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
