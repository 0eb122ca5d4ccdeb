"""numba kernel checking a SPLADE index's posting lists (``posting_offsets``, int32
``doc_ids``, uint8 ``impacts``): the check ``PostingsCheck`` runs on a term's postings the
first time a search reads them, or on all of them at a verified load.

``nogil``: searches on many threads check their terms in parallel.
"""

from __future__ import annotations

import numba


@numba.njit(cache=True, nogil=True)
def check_impact_terms(posting_offsets, doc_ids, impacts, n_docs, terms, checked):
    """The first of ``terms`` not yet marked in ``checked`` (uint8 per term) whose postings are
    malformed, or -1; each well-formed one is marked. Negatives are skipped.

    Well formed: doc ids ascend strictly and lie in ``[0, n_docs)``, and no impact is 0 (the
    kernels count a document hit when its accumulator leaves 0, and a dense search bisects
    each list). ``posting_offsets`` must already delimit ``doc_ids`` and ``impacts``
    (``storage.delimits``) and every term be below its length minus one: the kernel reads
    without bounds checks.
    """
    for term in terms:
        if term >= 0 and not checked[term]:
            previous = -1
            for i in range(posting_offsets[term], posting_offsets[term + 1]):
                doc = doc_ids[i]
                if doc <= previous or doc >= n_docs or impacts[i] == 0:
                    return term
                previous = doc
            checked[term] = 1
    return -1
