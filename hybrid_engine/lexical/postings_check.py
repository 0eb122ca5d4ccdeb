"""Checking an index's posting lists when a search first reads them, instead of all at load:
what lets a memory-mapped index open without reading its postings."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hybrid_engine.errors import IndexFormatError


class PostingsCheck:
    """The posting lists of one loaded index, checked term by term on first use.

    Parameters
    ----------
    check : callable
        ``check(terms, checked)``: the first of ``terms`` (int32 ids) whose postings are
        malformed, or -1; it marks each well-formed one in ``checked`` (uint8 per term) and
        may skip those marked already (``_postings_decode.check_terms``).
    n_terms : int
        Terms in the index.
    where : str
        The index's path, for error messages.

    Notes
    -----
    Thread-safe: two searches that check the same term at once both find it well formed (or
    both raise); marking it twice is harmless.
    """

    def __init__(self, check: Callable[[np.ndarray, np.ndarray], int], n_terms: int, where: str):
        self._check = check
        self._checked = np.zeros(n_terms, dtype=np.uint8)  # pages only touched terms
        self._where = where
        self._complete = False

    def terms(self, terms: np.ndarray) -> None:
        """Check the posting lists of ``terms`` (int32 term ids; negatives are skipped).

        Raises
        ------
        IndexFormatError
            One of them is malformed: the index is corrupt.
        """
        if self._complete or not len(terms):
            return
        bad = self._check(terms, self._checked)
        if bad >= 0:
            raise IndexFormatError(
                f"{self._where}: the postings of term {bad} are malformed; the index is "
                "corrupt, rebuild it"
            )

    def everything(self) -> None:
        """Check every posting list (before work that reads them all)."""
        if not self._complete:
            self.terms(np.arange(len(self._checked), dtype=np.int32))
            self._complete = True
