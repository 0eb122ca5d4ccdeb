"""RM3 query expansion for BM25: a first pass, the relevance model of its top documents, a
second pass with the expanded, weighted query."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hybrid_engine.checks import check_int, check_k, check_queries
from hybrid_engine.corpus import Document, document_text
from hybrid_engine.feedback._checks import check_number
from hybrid_engine.feedback.relevance_model import rm3_query
from hybrid_engine.lexical import Analyzer, BM25Index
from hybrid_engine.result import SearchResult

DEFAULT_FB_DOCS = 10
DEFAULT_FB_TERMS = 10
DEFAULT_ORIGINAL_WEIGHT = 0.5
"""Anserini's RM3 defaults (``-rm3.fbDocs``, ``-rm3.fbTerms``, ``-rm3.originalQueryWeight``)."""
DEFAULT_MAX_DOC_FREQ = 0.1
"""Anserini's stopword cut: a term in more than this share of the documents is no feedback
term."""


class RM3:
    """RM3 pseudo-relevance feedback over a ``BM25Index``, after Anserini's ``Rm3Reranker``.

    ``search`` runs BM25, takes the top ``fb_docs`` hits as relevant, builds the relevance
    model of their terms (``relevance_model.rm3_query``: each document's ``fb_terms`` most
    frequent terms as ``P(w|D) = tf / |D|``, weighted by the documents' first-pass scores
    normalised to sum 1, the ``fb_terms`` heaviest kept), mixes it with the query
    (``original_weight``) and searches again with the weighted terms
    (``BM25Index.search_weighted``).

    Parameters
    ----------
    index : BM25Index
        The index searched, both passes.
    documents : sequence of str or dict
        The indexed documents, ``documents[i]`` at position ``i`` of the index (``len(index)``
        of them; a ``BM25Index`` keeps postings, not texts). Read as ``BM25Index.build`` reads
        them (``title + " " + text``) and analysed with the index's analyzer when a document
        is a feedback document; held, not copied.
    fb_docs : int
        Feedback documents, >= 1 (fewer when the first pass has fewer hits).
    fb_terms : int
        Terms of each document's model and of the relevance model, >= 1.
    original_weight : float
        Share of the original query in the expanded one, in [0, 1]; 1 searches the query
        alone (with weights ``count / length``), 0 the relevance model alone.
    max_doc_freq : float
        A term in more than this share of the index's documents (its own ``doc_freqs``) is no
        feedback term, in (0, 1]; query terms are always kept.

    Raises
    ------
    TypeError
        ``index`` is not a ``BM25Index``, ``documents`` not a sequence, a parameter of the
        wrong type.
    ValueError
        ``documents`` of another length than the index, a parameter out of range.

    Notes
    -----
    Differences from Anserini: its feedback terms are also limited to 2-20 characters of
    ``[a-z0-9]``, which this analyzer's terms (any script, at least ``min_token_length``) are
    not; its ties in the top-term cuts fall in hash order, here a document's terms tie by
    first occurrence and the relevance model's by term. Thread-safe: searches may run from many
    threads (the index's searches are; the rest reads only).
    """

    def __init__(
        self,
        index: BM25Index,
        documents: Sequence[Document],
        *,
        fb_docs: int = DEFAULT_FB_DOCS,
        fb_terms: int = DEFAULT_FB_TERMS,
        original_weight: float = DEFAULT_ORIGINAL_WEIGHT,
        max_doc_freq: float = DEFAULT_MAX_DOC_FREQ,
    ) -> None:
        if not isinstance(index, BM25Index):
            raise TypeError(f"index must be a BM25Index, got {type(index).__name__}")
        if isinstance(documents, (str, bytes)) or not isinstance(documents, Sequence):
            raise TypeError(
                f"documents must be a sequence of the indexed documents (str or dict), got "
                f"{type(documents).__name__}"
            )
        if len(documents) != len(index):
            raise ValueError(
                f"documents has {len(documents)} items, the index {len(index)} documents: "
                "pass the corpus the index was built from, in its order"
            )
        self._index = index
        self._documents = documents
        self._fb_docs = check_int("fb_docs", fb_docs, 1)
        self._fb_terms = check_int("fb_terms", fb_terms, 1)
        self._original_weight = check_number("original_weight", original_weight, 0.0, 1.0)
        self._max_doc_freq = check_number("max_doc_freq", max_doc_freq, 0.0, 1.0, open_low=True)
        self._analyzer = Analyzer(index.analyzer)

    @property
    def index(self) -> BM25Index:
        """The BM25 index both passes search."""
        return self._index

    @property
    def fb_docs(self) -> int:
        """Feedback documents per query."""
        return self._fb_docs

    @property
    def fb_terms(self) -> int:
        """Terms per document model and in the relevance model."""
        return self._fb_terms

    @property
    def original_weight(self) -> float:
        """The original query's share of the expanded one."""
        return self._original_weight

    @property
    def max_doc_freq(self) -> float:
        """Share of the documents above which a term is no feedback term."""
        return self._max_doc_freq

    def __repr__(self) -> str:
        return (
            f"RM3(fb_docs={self._fb_docs}, fb_terms={self._fb_terms}, "
            f"original_weight={self._original_weight}, max_doc_freq={self._max_doc_freq})"
        )

    def expand(
        self, queries: str | Sequence[str] | np.ndarray, *, num_threads: int | None = None
    ) -> list[dict[str, float]]:
        """The expanded queries: the first pass and the relevance model, no second pass.

        Parameters
        ----------
        queries : str, sequence of str or 1-d numpy array of str
            As in ``BM25Index.search``.
        num_threads : int, optional
            Threads of the first pass, as in ``BM25Index.search``.

        Returns
        -------
        list of dict of str to float
            One ``{analysed term: weight > 0}`` per query, for ``BM25Index.search_weighted``;
            empty for a blank query or one of stopwords only. Query terms not in the index
            keep their share of the query model (as in Anserini) and match nothing.

        Raises
        ------
        ValueError
            A feedback document that does not analyse to as many terms as the index holds for
            it: ``documents`` is not the indexed corpus.
        """
        texts = check_queries(queries)
        first = self._index.search(texts, self._fb_docs, num_threads=num_threads)
        doc_freqs = self._index.doc_freqs
        limit = self._max_doc_freq * len(self._index)

        def keep(term: str) -> bool:
            t = self._index.term_id(term)
            return t >= 0 and bool(doc_freqs[t] <= limit)

        expanded = []
        for text, ids, scores in zip(texts, first.ids, first.scores, strict=True):
            hits = ids >= 0
            expanded.append(
                rm3_query(
                    self._analyzer.analyze(text),
                    [self._document_terms(int(d)) for d in ids[hits]],
                    [float(s) for s in scores[hits]],
                    fb_terms=self._fb_terms,
                    original_weight=self._original_weight,
                    keep=keep,
                )
            )
        return expanded

    def search(
        self,
        queries: str | Sequence[str] | np.ndarray,
        k: int = 10,
        *,
        num_threads: int | None = None,
    ) -> SearchResult:
        """BM25 top-k of the RM3-expanded queries (``expand``, then
        ``BM25Index.search_weighted``).

        Parameters
        ----------
        queries, num_threads
            As in ``BM25Index.search``; both passes use ``num_threads``.
        k : int
            Hits per query, >= 1, padded as in ``BM25Index.search`` (a blank query's row is
            all padding).

        Returns
        -------
        SearchResult
            ``ids`` int64 and ``scores`` float32, shape ``(n_queries, k)``: the scores of the
            weighted query (on another scale than plain BM25's).

        Raises
        ------
        ValueError
            ``k < 1``, or ``documents`` is not the indexed corpus (see ``expand``).
        TypeError
            Queries that are not a str or a batch of str.
        """
        k = check_k(k)
        expanded = self.expand(queries, num_threads=num_threads)
        return self._index.search_weighted(expanded, k, num_threads=num_threads)

    def _document_terms(self, position: int) -> list[str]:
        terms = self._analyzer.analyze(document_text(self._documents[position], position)[0])
        if len(terms) != self._index.doc_lengths[position]:
            raise ValueError(
                f"documents[{position}] analyses to {len(terms)} terms, the index holds "
                f"{int(self._index.doc_lengths[position])} for its document {position}: pass "
                "the corpus the index was built from, in its order"
            )
        return terms
