"""BM25 retrieval: a C++-built inverted index scored by numba kernels, with its own collection
statistics or with those of a larger collection it is a segment of."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from hybrid_engine.checks import check_allowed, check_k, check_queries
from hybrid_engine.corpus import Document
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.lexical.analysis import AnalyzerConfig
from hybrid_engine.lexical.attributes import BM25Attributes
from hybrid_engine.lexical.build import index_corpus
from hybrid_engine.lexical.format import read_index, write_index
from hybrid_engine.lexical.params import BM25Params
from hybrid_engine.lexical.phrases import (
    Phrases,
    matching_documents,
    phrase_groups,
    quoted_phrases,
    stitched,
)
from hybrid_engine.lexical.statistics import CollectionStats, check_statistics
from hybrid_engine.lexical.weighted import weighted_queries
from hybrid_engine.result import SearchResult, hits_width
from hybrid_engine.storage import verify_default

IMPACT_CACHE_MAX_BYTES = 2 << 30
"""``cache_impacts=None`` decodes postings into the 8-byte-per-posting impact layout when it
takes at most this many bytes (and the index is not memory-mapped)."""


class BM25Index(BM25Attributes):
    """An immutable BM25 index over a fixed corpus.

    Build one with ``BM25Index.build`` or read one with ``BM25Index.load``. An index scores
    with its own statistics (``N``, each term's document frequency, the average document
    length); ``with_statistics`` gives a view of it that scores with a larger collection's, as
    a segment of a live index does.

    Notes
    -----
    Thread-safe: ``search`` may run from many threads at once; the C++ query analysis and the
    numba scoring release the GIL.
    """

    # -- construction -------------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        corpus: Iterable[Document],
        *,
        k1: float = 0.9,
        b: float = 0.4,
        method: str = "lucene",
        delta: float = 0.5,
        analyzer: AnalyzerConfig | None = None,
        num_threads: int | None = None,
        show_progress: bool = False,
        batch_size: int = 16384,
        cache_impacts: bool | None = None,
        positions: bool = False,
    ) -> BM25Index:
        """Index a corpus.

        Parameters
        ----------
        corpus : iterable of str or dict
            Documents: plain strings, or dicts with ``"text"`` and optional ``"title"`` (indexed
            together with the text as ``title + " " + text``) and ``"_id"``. Read once, in
            batches, so a generator works.
        k1, b, method, delta : see ``BM25Params``
            Defaults are Anserini's BEIR settings (Lucene BM25, k1=0.9, b=0.4).
        analyzer : AnalyzerConfig, optional
            Text analysis; recorded in the index and applied to queries too.
        num_threads : int, optional
            Analysis threads; all available cores when None.
        show_progress : bool
            Show a progress bar (tqdm) on stderr.
        batch_size : int
            Documents analysed per C++ call.
        cache_impacts : bool, optional
            Keep every posting decoded in memory as (doc id, score factor), 8 bytes each, for
            faster scoring (about 1.3x on SciFact, 2x at 5M documents). None: only when that
            takes at most ``IMPACT_CACHE_MAX_BYTES``. Results are bit-identical either way.
        positions : bool
            Also record where each term occurs in each document, for phrase queries
            (``search``, ``lexical.phrases``): about 1.1 more bytes per token on disk and in
            memory, and a longer build (docs/lexical.md "Phrases" measures both).

        Raises
        ------
        ValueError
            Empty corpus, bad parameters, duplicate or partly missing ``_id``s.
        TypeError
            A document that is not ``str`` or a dict of ``str``.
        """
        params = BM25Params(method=method, k1=k1, b=b, delta=delta)
        analyzer = analyzer if analyzer is not None else AnalyzerConfig()
        arrays, doc_ids = index_corpus(
            corpus, analyzer, num_threads, show_progress, batch_size, positions
        )
        cache = _auto_cache(arrays, mmap=False) if cache_impacts is None else cache_impacts
        return cls(arrays, params, analyzer, doc_ids, cache)

    # -- search -------------------------------------------------------------------------------

    def search(
        self,
        queries: str | Sequence[str] | np.ndarray,
        k: int = 10,
        *,
        num_threads: int | None = None,
        allowed: np.ndarray | None = None,
    ) -> SearchResult:
        """Exact BM25 top-k for each query.

        Parameters
        ----------
        queries : str, sequence of str or 1-d numpy array of str
            One query or a batch; analysed like the documents.
        k : int
            Hits per query, >= 1; a ``k`` above the number of documents ``n`` asks for all of
            them (the result has ``min(k, n)`` columns). Rows are padded (id -1, score -inf)
            when fewer documents hold any query term, e.g. a query made only of unknown words
            or stopwords; an empty or blank query is such a query (its row is all padding), in
            a batch too. In an index with positions (``has_positions``), the phrases a query
            quotes (``"heart attack"``) are required: its hits hold each of them as a run of
            terms (``lexical.phrases``); elsewhere quotes are punctuation.
        num_threads : int, optional
            Threads scoring the batch; when None, up to all cores for large batches (one per
            32 queries).
        allowed : numpy.ndarray, optional
            bool ``(num_documents,)``, C-contiguous: only documents with ``allowed[d]`` are
            returned (deleted or filtered-out documents are False). A row equals the unmasked
            ranking with the other documents removed, ids and scores alike, so it holds ``k``
            hits whenever ``k`` allowed documents match. The mask does not change the scores:
            for the statistics of the allowed documents only, search a ``with_statistics``
            view.

        Returns
        -------
        SearchResult
            ``ids`` int64 and ``scores`` float32, shape ``(n_queries, min(k, num_documents))``.

        Raises
        ------
        ValueError
            ``k < 1``, or ``allowed`` of the wrong shape or not C-contiguous.
        TypeError
            Queries that are not a str or a batch of str (``checks.check_queries``), or
            ``allowed`` that is not a numpy bool array.
        IndexFormatError
            A posting list the queries read is malformed (an index loaded without ``verify``).
        """
        texts = check_queries(queries)
        k = hits_width(check_k(k), self.num_documents)
        if not self.has_positions:
            return self._searcher.search(
                self._encoder.encode(texts), k, num_threads, allowed=allowed
            )
        groups = phrase_groups([quoted_phrases(text) for text in texts])

        def search(phrases: Phrases, rows: np.ndarray) -> SearchResult:
            mask = self.phrase_mask(phrases, allowed)
            encoded = self._encoder.encode([texts[row] for row in rows])
            return self._searcher.search(encoded, k, num_threads, allowed=mask)

        return stitched(len(texts), groups, search)

    def search_weighted(
        self,
        queries: Sequence[Mapping[str, float]],
        k: int = 10,
        *,
        num_threads: int | None = None,
        allowed: np.ndarray | None = None,
    ) -> SearchResult:
        """Exact BM25 top-k for queries of analysed terms with a weight each.

        A document scores ``sum over the query's terms t of weight(t) * idf(t) * tf part``:
        ``search`` is the case of each term weighted by its count in the query. What query
        expansion (``feedback.RM3``) searches with.

        Parameters
        ----------
        queries : sequence of mapping of str to float
            One ``{analysed term: weight}`` per query (``lexical.weighted``): terms as
            ``Analyzer(index.analyzer).analyze`` gives them, not analysed again; weights
            positive, finite float32 numbers. Terms not in the index match nothing; a query of
            none of them (or an empty one) gets an all-padding row.
        k, num_threads, allowed
            As in ``search``.

        Returns
        -------
        SearchResult
            As ``search`` returns.

        Raises
        ------
        TypeError
            ``queries`` is not a sequence of mappings of str to a real number.
        ValueError
            ``k < 1``, a weight that is not a positive finite float32 (or so large that a
            score passes the float32 range), or a bad ``allowed``.
        """
        encoded = weighted_queries(queries, self.term_id)
        k = hits_width(check_k(k), self.num_documents)
        return self._searcher.search(encoded, k, num_threads, allowed=allowed)

    def phrase_mask(
        self, phrases: Sequence[str], allowed: np.ndarray | None = None
    ) -> np.ndarray | None:
        """The documents holding every one of ``phrases`` (``lexical.phrases`` says how a
        phrase matches), within ``allowed``.

        Parameters
        ----------
        phrases : sequence of str
            Phrases, unquoted. One the analyzer leaves no term of (only stopwords, say) asks
            for nothing.
        allowed : numpy.ndarray, optional
            bool ``(num_documents,)``: only these documents may match.

        Returns
        -------
        numpy.ndarray or None
            bool ``(num_documents,)``; None when nothing is asked (no phrase has a term) and
            ``allowed`` is None.

        Raises
        ------
        ValueError
            The index has no positions (build it with ``positions=True``).
        IndexFormatError
            The positions or postings the phrases read are malformed (an index loaded
            without ``verify``).
        """
        if not self.has_positions:
            raise ValueError(
                "phrase queries need positions; build the index with positions=True "
                "(bm25_options={'positions': True} for HybridIndex)"
            )
        mask = None if allowed is None else check_allowed(allowed, self.num_documents)
        for phrase in phrases:
            docs = self._phrase_documents(phrase)
            if docs is None:
                continue
            matching = np.zeros(self.num_documents, dtype=bool)
            matching[docs] = True
            mask = matching if mask is None else mask & matching
        return mask

    def _phrase_documents(self, phrase: str) -> np.ndarray | None:
        """The documents (int64, ascending) holding ``phrase``; None when the analyzer
        leaves it no term."""
        terms = self._phrase_analyzer.analyze(phrase)
        if not terms:
            return None
        ids = np.array([self.term_id(term) for term in terms], dtype=np.int32)
        if np.any(ids < 0):
            return np.empty(0, dtype=np.int64)
        if self._check is not None:
            self._check.terms(ids)
        return matching_documents(self._arrays, ids)

    # -- collection statistics ----------------------------------------------------------------

    def live_doc_freqs(self, allowed: np.ndarray) -> np.ndarray:
        """For each term id, how many documents with ``allowed[d]`` hold it.

        Parameters
        ----------
        allowed : numpy.ndarray
            bool ``(num_documents,)``, C-contiguous: the live documents.

        Returns
        -------
        numpy.ndarray
            int64 ``(num_terms,)``, aligned with ``terms``.
        """
        return self._searcher.live_doc_freqs(allowed)

    def live_statistics(self, allowed: np.ndarray) -> CollectionStats:
        """The ``CollectionStats`` of the documents with ``allowed[d]`` (bool
        ``(num_documents,)``, C-contiguous): their count and total length."""
        allowed = check_allowed(allowed, self.num_documents)
        lengths = self._arrays["doc_lengths"]
        return CollectionStats(
            int(np.count_nonzero(allowed)), int(np.sum(lengths, where=allowed, dtype=np.int64))
        )

    def with_statistics(self, stats: CollectionStats, doc_freqs: np.ndarray) -> BM25Index:
        """This index scoring with a collection's statistics: a segment of a live index.

        The new index shares this one's postings, vocabulary, ids and query encoder (no
        copies); only the per-term idf, the per-document length factors and, when this index
        caches impacts, the impact cache are recomputed. Scores are bit-identical to those of
        an index built over the collection's documents (its live documents) when ``stats`` and
        ``doc_freqs`` are that collection's: search it with ``allowed`` marking this index's
        live documents.

        Parameters
        ----------
        stats : CollectionStats
            The collection's document count ``N`` (>= 1) and total length; length
            normalisation uses ``avgdl = stats.total_length / stats.n_docs``.
        doc_freqs : numpy.ndarray
            int64 ``(num_terms,)``: for each of this index's term ids (see ``terms``), how
            many of the collection's documents hold the term, in ``[0, stats.n_docs]``. A term
            of count 0 neither scores nor matches.

        Returns
        -------
        BM25Index
            A view whose ``statistics`` is ``stats``; ``save`` refuses it (save the index it
            came from).

        Raises
        ------
        TypeError
            ``stats`` is not a ``CollectionStats``, or ``doc_freqs`` not an int64 numpy array.
        ValueError
            ``stats.n_docs`` is 0, or ``doc_freqs`` has the wrong shape or a count outside
            ``[0, stats.n_docs]``.
        """
        check_statistics(stats, doc_freqs, self.terms)
        return BM25Index(
            self._arrays,
            self._params,
            self._analyzer,
            self._doc_ids,
            self._cache_impacts,
            encoder=self._encoder,
            statistics=(stats, doc_freqs),
            check=self._check,
        )

    # -- persistence --------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the index to directory ``path`` atomically (see ``storage.write_index_dir``).

        Raises
        ------
        ValueError
            The index is a ``with_statistics`` view: its statistics are not recorded, so it
            would load scoring differently.
        """
        if self._external_statistics:
            raise ValueError(
                "this index scores with collection statistics given to with_statistics, which "
                "save does not record; save the index it was made from"
            )
        stats = {
            "num_documents": self.num_documents,
            "num_terms": self.num_terms,
            "num_postings": self.num_postings,
            "avg_doc_length": self.avg_doc_length,
        }
        write_index(path, self._arrays, self._params, self._analyzer, self._doc_ids, stats)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        mmap: bool = False,
        verify: bool | None = None,
        cache_impacts: bool | None = None,
    ) -> BM25Index:
        """Read an index saved by ``save``.

        Parameters
        ----------
        path : path-like
            The index directory.
        mmap : bool
            Memory-map the large arrays read-only instead of reading them.
        verify : bool, optional
            Check every file's sha256, every posting list and the vocabulary's hash table now
            (one pass over the data). Without, a posting list is checked the first time a
            search reads it, so a corrupt one never reaches the kernels either: that search
            raises ``IndexFormatError``; and terms are looked up in the saved table as it is
            (a corrupt table can make a term not found, never read outside the arrays). None
            (the default): ``not mmap``, so that a memory-mapped index opens without reading
            its postings or its term table (the vocabulary offsets, document lengths and ids
            are still read).
        cache_impacts : bool, optional
            As in ``build``; None caches unless ``mmap`` is set or the cache would exceed
            ``IMPACT_CACHE_MAX_BYTES``.

        Raises
        ------
        IndexFormatError
            The directory is missing, truncated, corrupt, or not a BM25 index of this format.
        """
        verify = verify_default(verify, mmap)
        arrays, params, analyzer, doc_ids, check = read_index(path, mmap=mmap, verify=verify)
        cache = _auto_cache(arrays, mmap=mmap) if cache_impacts is None else cache_impacts
        try:
            return cls(arrays, params, analyzer, doc_ids, cache, check=check)
        except ValueError as exc:  # a vocab_slots array the C++ term table cannot use
            raise IndexFormatError(f"{path}: {exc}; rebuild the index") from None


def _auto_cache(arrays: dict[str, np.ndarray], *, mmap: bool) -> bool:
    return not mmap and 8 * int(arrays["doc_freqs"].sum()) <= IMPACT_CACHE_MAX_BYTES
