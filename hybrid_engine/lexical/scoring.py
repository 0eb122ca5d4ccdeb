"""The scoring state of a BM25 index: per-term idf, per-document length factors and the
optional impact cache, from its postings, parameters and collection statistics."""

from __future__ import annotations

import numpy as np

from hybrid_engine.lexical._formulas import METHODS, doc_factors, term_idf
from hybrid_engine.lexical._postings_decode import impacts_from_postings
from hybrid_engine.lexical.params import BM25Params
from hybrid_engine.lexical.postings import PostingsSearcher
from hybrid_engine.lexical.postings_check import PostingsCheck
from hybrid_engine.lexical.statistics import CollectionStats

_NO_IMPACTS = (np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))


def bm25_searcher(
    arrays: dict[str, np.ndarray],
    params: BM25Params,
    statistics: CollectionStats,
    doc_freqs: np.ndarray,
    cache_impacts: bool,
    check: PostingsCheck | None,
) -> PostingsSearcher:
    """The ``PostingsSearcher`` scoring an index's postings with BM25.

    Parameters
    ----------
    arrays : dict of numpy.ndarray
        The index arrays (``BM25Index``'s, validated): ``posting_offsets``, ``postings``,
        ``doc_freqs`` and ``doc_lengths`` are read.
    params : BM25Params
        The variant and its parameters.
    statistics : CollectionStats
        The collection ``N`` and ``avgdl`` come from.
    doc_freqs : numpy.ndarray
        Integer ``(n_terms,)``: the collection's document frequency of each term id, for idf.
    cache_impacts : bool
        Decode every posting into the impact layout (8 bytes each) to score from.
    check : PostingsCheck or None
        The posting lists not checked yet (see ``PostingsSearcher``); all are checked first
        when ``cache_impacts`` decodes them.

    Returns
    -------
    PostingsSearcher
        Bit-identical results with or without ``cache_impacts``.
    """
    doc_lengths = arrays["doc_lengths"]
    idf = term_idf(doc_freqs, statistics.n_docs, params.method)
    factors = doc_factors(
        doc_lengths, statistics.avg_doc_length, params.method, params.k1, params.b
    )
    scoring = (METHODS[params.method], float(params.k1), float(params.delta))
    impacts = _NO_IMPACTS
    if cache_impacts:
        if check is not None:
            check.everything()
        impacts = impacts_from_postings(
            arrays["posting_offsets"], arrays["postings"], arrays["doc_freqs"], factors, *scoring
        )
    # The kernels' view of the postings (see ``_kernels.search_batch``).
    layout = (arrays["posting_offsets"], arrays["postings"], factors, *impacts, cache_impacts)
    return PostingsSearcher(idf, arrays["doc_freqs"], layout, scoring, len(doc_lengths), check)
