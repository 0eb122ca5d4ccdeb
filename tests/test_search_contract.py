"""One search contract (issue 30): every kind of index takes the same search options, checked
once by ``SearchPlan.checked``, and has the same lifecycle."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest

from hybrid_engine import HybridIndex, ParentDocumentIndex
from hybrid_engine.distributed import ShardedIndex
from hybrid_engine.engine.search import SEARCH_DEFAULTS, Searchable
from hybrid_engine.integrations._search import SEARCH_OPTIONS as ADAPTER_OPTIONS
from hybrid_engine.pipeline.plan import SEARCH_OPTIONS, SearchPlan

PACKAGE = Path(__file__).resolve().parents[1] / "hybrid_engine"


def _options(function: object) -> list[str]:
    """The keyword-only parameters of ``function``, in order."""
    return [
        name
        for name, parameter in inspect.signature(function).parameters.items()  # type: ignore[arg-type]
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    ]


def test_every_index_kind_takes_the_same_search_options() -> None:
    assert _options(HybridIndex.search) == list(SEARCH_OPTIONS)
    # One method, so one signature, one set of defaults and one docstring for both kinds.
    assert HybridIndex.search is ShardedIndex.search is Searchable.search
    assert list(SEARCH_DEFAULTS) == [name for name in SEARCH_OPTIONS if name != "num_threads"]
    # The plan takes every option it checks, with no defaults of its own.
    checked = inspect.signature(SearchPlan.checked).parameters
    assert [name for name in _options(SearchPlan.checked) if name in SEARCH_DEFAULTS] == list(
        SEARCH_DEFAULTS
    )
    assert all(checked[name].default is inspect.Parameter.empty for name in SEARCH_DEFAULTS)
    assert ADAPTER_OPTIONS == {"k", *SEARCH_OPTIONS}
    # A parent index passes the options to its inner engine's search.
    parameters = inspect.signature(ParentDocumentIndex.search).parameters
    assert parameters["options"].kind is inspect.Parameter.VAR_KEYWORD


def test_the_plan_checks_queries_stack_and_query_vectors_once() -> None:
    plan = SearchPlan.checked(
        "one query",
        5,
        retrievers=("bm25", "dense"),
        verdict=None,
        dim=3,
        **{**SEARCH_DEFAULTS, "offset": 2},
    )
    assert plan.texts == ["one query"] and plan.k == 7 and plan.query_vectors is None
    vectors = np.ones((2, 3), np.float32)
    plan = SearchPlan.checked(
        ["a", "b"],
        5,
        retrievers=("bm25", "dense"),
        verdict=None,
        dim=3,
        **{**SEARCH_DEFAULTS, "query_vectors": vectors},
    )
    np.testing.assert_array_equal(plan.query_vectors, vectors)
    cases = [
        ({"queries": 3}, TypeError, "str"),
        ({"query_vectors": vectors, "dim": None}, ValueError, "no dense leg"),
        ({"query_vectors": vectors[:1]}, ValueError, r"shape \(n_queries, dim\) = \(2, 3\)"),
        ({"query_vectors": vectors.astype(np.float64)}, TypeError, "must be float32"),
    ]
    for change, error, message in cases:
        arguments = {"queries": ["a", "b"], "dim": 3, **SEARCH_DEFAULTS, **change}
        with pytest.raises(error, match=message):
            SearchPlan.checked(
                arguments.pop("queries"), 5, retrievers=("bm25", "dense"), verdict=None,
                **arguments,
            )  # fmt: skip


CHECKS = {"check_queries", "search_options", "check_budget", "check_facets", "check_decay"}
"""What checks a search's arguments: called by ``SearchPlan.checked`` only."""


def test_no_search_argument_is_checked_outside_the_plan() -> None:
    """The search methods of the indexes call none of the argument checks themselves."""
    for path in ("engine/search.py", "engine/index.py", "distributed/index.py", "parents/index.py"):
        tree = ast.parse((PACKAGE / path).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and "search" in node.name:
                called = {
                    getattr(call.func, "id", getattr(call.func, "attr", ""))
                    for call in ast.walk(node)
                    if isinstance(call, ast.Call)
                }
                assert not called & CHECKS, (path, node.name, called & CHECKS)


LIFECYCLE = (
    "build", "add", "upsert", "delete", "commit", "merge", "rollback", "get", "holds",
    "staged", "has_staged", "close", "search", "asearch", "aget", "aadd", "aupsert",
    "adelete", "acommit", "amerge", "__enter__", "__exit__", "__len__",
)  # fmt: skip


@pytest.mark.parametrize("kind", [HybridIndex, ParentDocumentIndex, ShardedIndex])
def test_every_index_kind_has_the_lifecycle(kind: type) -> None:
    """The same methods with the same keyword options on every kind; a sharded index is
    opened (``open``: it starts its shards' actors) where the others load, and has no
    ``save`` (it is written where ``build`` puts it), as docs/scaling.md says."""
    missing = [name for name in LIFECYCLE if not hasattr(kind, name)]
    assert not missing
    assert hasattr(kind, "open" if kind is ShardedIndex else "load")
    for name in ("delete", "get"):
        assert _options(getattr(kind, name)) == ["missing_ok"]
