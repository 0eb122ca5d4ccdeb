"""Indexing a corpus: its documents analysed in batches by the C++ index builder."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from hybrid_engine import _core
from hybrid_engine.checks import check_threads
from hybrid_engine.corpus import DocIds, Document, iter_batches
from hybrid_engine.lexical.analysis import AnalyzerConfig
from hybrid_engine.lexical.word_terms import WordTerms
from hybrid_engine.packed import pack_utf8
from hybrid_engine.progress import progress_bar


def index_corpus(
    corpus: Iterable[Document],
    analyzer: AnalyzerConfig,
    num_threads: int | None,
    show_progress: bool,
    batch_size: int,
    positions: bool = False,
) -> tuple[dict[str, np.ndarray], DocIds]:
    """The index arrays and document ids of a corpus (arguments as in ``BM25Index.build``).

    Returns
    -------
    arrays : dict of numpy.ndarray
        The C++ builder's arrays: vocabulary, document frequencies, postings and document
        lengths, and with ``positions`` the positions of every posting.
    doc_ids : DocIds
        The corpus ``_id`` of each position.

    Raises
    ------
    ValueError
        Empty corpus, duplicate or partly missing ``_id``s.
    TypeError
        A document that is not ``str`` or a dict of ``str``.
    """
    builder = _core.IndexBuilder(analyzer.to_core(), check_threads(num_threads), positions)
    ids: list[str | None] = []
    total = len(corpus) if isinstance(corpus, Sequence) else None
    with progress_bar(total=total, unit="doc", desc="indexing", show=show_progress) as bar:
        for texts, batch_ids in iter_batches(corpus, batch_size):
            builder.add(texts)
            ids.extend(batch_ids)
            bar.update(len(texts))
    if not ids:
        raise ValueError("the corpus is empty; give at least one document")
    word_terms = analyzer.word_terms()
    if word_terms is None:
        return builder.finish(), DocIds.from_list(ids)
    return finish_mapped(builder, word_terms), DocIds.from_list(ids)


def finish_mapped(builder: _core.IndexBuilder, word_terms: WordTerms) -> dict[str, np.ndarray]:
    """The builder's index with each of its words mapped to its term by ``word_terms``
    (``IndexBuilder.finish_mapped`` merges the frequencies of words of one term and drops
    the stopwords); term ids follow the first word of each term."""
    terms: dict[str, int] = {}
    targets = np.array(
        [-1 if term is None else terms.setdefault(term, len(terms))
         for term in word_terms.terms(builder.terms())],
        dtype=np.int32,
    )  # fmt: skip
    vocab_bytes, vocab_offsets = pack_utf8(list(terms))
    return builder.finish_mapped(targets, vocab_bytes, vocab_offsets)
