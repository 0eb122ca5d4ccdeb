"""``progress_bar``: a tqdm bar on stderr when asked for, nothing at all otherwise.

A disabled ``tqdm`` still takes tqdm's process-shared lock and may start its monitor thread;
commits build segments often and quietly, and a process killed inside that lock (a worker
stopped with SIGKILL) leaves it held for every process forked from the same parent. So no
bar is made unless one is shown."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from tqdm.auto import tqdm


class Bar(Protocol):
    """What the package calls on a bar."""

    def update(self, n: float = 1) -> bool | None: ...

    def set_postfix(self, **values: object) -> None: ...


class _Silent:
    """A bar that shows nothing."""

    def update(self, n: float = 1) -> None:
        del n

    def set_postfix(self, **values: object) -> None:
        del values


@contextmanager
def progress_bar(*, total: int | None, desc: str, unit: str = "it", show: bool) -> Iterator[Bar]:
    """A tqdm bar of ``total`` ``unit``\\ s described ``desc`` when ``show``; a silent one
    (no tqdm made) otherwise. Closed when the block ends."""
    if not show:
        yield _Silent()
        return
    with tqdm(total=total, unit=unit, desc=desc) as bar:
        yield bar
