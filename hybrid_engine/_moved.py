"""Old module paths that still import: each old name is the module at its new name.

Modules renamed so that the same thing has the same name in every subpackage (``result``
for result types, ``index``, ``attributes``, ``format``, ``params`` in each leg) keep their
old paths working for code that imports them: ``MOVED`` maps each old name to the new one,
and a finder on ``sys.meta_path`` (put there by ``hybrid_engine/__init__.py``) answers an
old name with the new module itself, so ``hybrid_engine.results is hybrid_engine.result``
after the import, and warns with a ``DeprecationWarning`` that names the new path (shown
by default in ``__main__`` and under pytest; silence it with ``warnings.filterwarnings``).

The finder answers only the names in ``MOVED``; every other import goes by as before. Nothing
inside the package, its tests, scripts or benchmarks imports an old name
(``tests/test_moved_modules.py`` checks it).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType

MOVED: dict[str, str] = {
    "hybrid_engine.results": "hybrid_engine.result",
    "hybrid_engine.parents.results": "hybrid_engine.parents.result",
    "hybrid_engine.lexical.bm25": "hybrid_engine.lexical.index",
    "hybrid_engine.lexical.bm25_attributes": "hybrid_engine.lexical.attributes",
    "hybrid_engine.lexical.bm25_build": "hybrid_engine.lexical.build",
    "hybrid_engine.lexical.bm25_format": "hybrid_engine.lexical.format",
    "hybrid_engine.lexical.bm25_params": "hybrid_engine.lexical.params",
    "hybrid_engine.lexical.bm25_scoring": "hybrid_engine.lexical.scoring",
    "hybrid_engine.pipeline.engine": "hybrid_engine.engine.index",
    "hybrid_engine.pipeline.engine_attributes": "hybrid_engine.engine.attributes",
    "hybrid_engine.pipeline.engine_format": "hybrid_engine.engine.format",
    "hybrid_engine.pipeline.lifecycle": "hybrid_engine.engine.lifecycle",
    "hybrid_engine.pipeline.asynchronous": "hybrid_engine.engine.asynchronous",
}
"""Old module name -> the name the module has now."""

MOVED_NAMES: dict[str, dict[str, str]] = {
    "hybrid_engine.pipeline": {"HybridIndex": "hybrid_engine.engine"},
}
"""Package -> {name it no longer defines -> the module that holds the name now}."""


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names in ``moved`` and loads each as the module at its new name.

    Parameters
    ----------
    moved : dict of str to str
        Old module name -> new module name.

    Notes
    -----
    Loading puts the new module into ``sys.modules`` under the old name (the import system
    then returns that entry as it is), so the new module's ``__name__`` and ``__spec__`` stay
    its own and both names give the very same object. The warning is raised once per process
    for each old name: later imports find it in ``sys.modules``.
    """

    def __init__(self, moved: dict[str, str]) -> None:
        self.moved = dict(moved)

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        """A spec loaded by this finder for an old name; None for every other name."""
        if fullname not in self.moved:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        """None: the import system makes a placeholder, replaced by ``exec_module``."""
        return None

    def exec_module(self, module: ModuleType) -> None:
        """Import the new module, warn, and put it in ``sys.modules`` under the old name."""
        old = module.__name__
        new = self.moved[old]
        # stacklevel 2 is the import statement: warn skips the import system's own frames.
        warnings.warn(
            f"{old} is deprecated: import {new} instead",
            DeprecationWarning,
            stacklevel=2,
        )
        sys.modules[old] = importlib.import_module(new)


def moved_name(package: str, name: str) -> object:
    """A name a package exported before it moved (``MOVED_NAMES``), with a DeprecationWarning.

    Parameters
    ----------
    package : str
        The package asked, e.g. ``hybrid_engine.pipeline``.
    name : str
        The attribute asked of it.

    Returns
    -------
    object
        The object under its new module.

    Raises
    ------
    AttributeError
        Where the package never exported ``name`` (the usual error of a missing attribute).
    """
    new = MOVED_NAMES.get(package, {}).get(name)
    if new is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    # stacklevel 3: past the package's __getattr__ to the caller's import or attribute.
    warnings.warn(
        f"{package}.{name} is deprecated: import it from {new} instead",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(importlib.import_module(new), name)


def install_moved_modules() -> None:
    """Put a ``MovedModuleFinder`` over ``MOVED`` first on ``sys.meta_path``, once.

    First, so that an old name never finds a stale file left under it; it answers only the
    names in ``MOVED``.
    """
    if not any(isinstance(finder, MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder(MOVED))
