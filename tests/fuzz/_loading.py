"""What the loader harnesses share: a saved pristine index per process, a fresh edited copy
per input, and the rule that an index that loads must then search without error."""

from __future__ import annotations

import atexit
import shutil
import tempfile
import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import atheris
import numpy as np

from hybrid_engine.errors import IndexFormatError
from tests.fuzz._harness import Unexpected, refused
from tests.fuzz._mutate import mutate, pristine_copy
from tests.fuzz.splade_search import check_rows


@cache
def scratch() -> Path:
    """A temporary folder of this process, removed at exit."""
    folder = Path(tempfile.mkdtemp(prefix="hybrid-engine-fuzz-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def saved(name: str, save: Callable[[Path], None]) -> Path:
    """The pristine index ``name``, saved once by ``save(path)``."""
    path = scratch() / f"pristine-{name}"
    if not path.exists():
        save(path)
    return path


def edited(pristine: Path, fdp: atheris.FuzzedDataProvider) -> Path:
    """A copy of ``pristine`` with the fuzzer's edits, checksums recomputed."""
    root = pristine_copy(pristine, scratch() / "edited")
    mutate(root, fdp)
    return root


def load_then_search(
    root: Path, load: Callable[[], Any], search: Callable[[Any], Any], n_docs: Callable[[Any], int]
) -> None:
    """``load()`` must refuse with a documented error naming ``root``, or give an index that
    ``search`` queries into well-formed rows, or refuses with an ``IndexFormatError`` naming
    ``root`` (a posting list checked when first read: a load without ``verify``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        index = refused(load, names=root)
    if index is None:
        return
    try:
        result = search(index)
    except IndexFormatError as exc:
        if str(root) not in str(exc):
            raise Unexpected(f"IndexFormatError that does not name {root}: {exc}") from exc
        return
    except Exception as exc:
        raise Unexpected(f"an index that loaded fails to search: {exc!r}") from exc
    finally:
        close = getattr(index, "close", None)
        if close is not None:
            close()
    ids = np.asarray(result.ids)
    check_rows(ids, np.asarray(result.scores), n_docs(index))
