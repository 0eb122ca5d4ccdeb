"""BM25 retrieval: a C++-built inverted index scored by numba kernels, with its own collection
statistics or with those of a larger collection it is a segment of."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from hybrid_engine import _core
from hybrid_engine.checks import check_allowed, check_k, check_queries, check_threads
from hybrid_engine.corpus import DocIds, Document, iter_batches
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.lexical import _kernels as kernels
from hybrid_engine.lexical.analysis import AnalyzerConfig
from hybrid_engine.lexical.postings import PostingsSearcher
from hybrid_engine.lexical.statistics import CollectionStats
from hybrid_engine.packed import PackedStrings
from hybrid_engine.results import SearchResult
from hybrid_engine.storage import delimits, read_index_dir, write_index_dir

FORMAT = "hybrid_engine.bm25"
FORMAT_VERSION = 1
_INDEX_ARRAYS = {
    "vocab_bytes": np.uint8,
    "vocab_offsets": np.int64,
    "doc_freqs": np.int32,
    "posting_offsets": np.int64,
    "postings": np.uint8,
    "doc_lengths": np.int32,
}
IMPACT_CACHE_MAX_BYTES = 2 << 30
"""``cache_impacts=None`` decodes postings into the 8-byte-per-posting impact layout when it
takes at most this many bytes (and the index is not memory-mapped)."""
_NO_IMPACTS = (np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float32))


@dataclass(frozen=True)
class BM25Params:
    """Scoring parameters, fixed when the index is built.

    Parameters
    ----------
    method : {"lucene", "robertson", "atire", "bm25l", "bm25+"}
        The BM25 variant (formulas as in Kamphuis et al., ECIR 2020).
    k1 : float
        Term-frequency saturation, >= 0.
    b : float
        Length normalisation, in [0, 1].
    delta : float
        Lower bound on a matching term's contribution (bm25l and bm25+ only), >= 0.
    """

    method: str = "lucene"
    k1: float = 0.9
    b: float = 0.4
    delta: float = 0.5

    def __post_init__(self) -> None:
        if self.method not in kernels.METHODS:
            raise ValueError(
                f"unknown BM25 method {self.method!r}; choose one of {sorted(kernels.METHODS)}"
            )
        for name, low, high in (("k1", 0.0, np.inf), ("b", 0.0, 1.0), ("delta", 0.0, np.inf)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{name} must be a number, got {type(value).__name__}")
            if not low <= value <= high:
                raise ValueError(f"{name} must be in [{low}, {high}], got {value}")


_PARAM_NAMES = {f.name for f in fields(BM25Params)}


class BM25Index:
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

    def __init__(
        self,
        arrays: dict[str, np.ndarray],
        params: BM25Params,
        analyzer: AnalyzerConfig,
        doc_ids: DocIds,
        cache_impacts: bool,
        *,
        encoder: _core.QueryEncoder | None = None,
        statistics: tuple[CollectionStats, np.ndarray] | None = None,
    ) -> None:
        """Private: use ``build``, ``load`` or ``with_statistics``. ``arrays`` (and
        ``statistics``, the collection's stats and per-term document frequencies) must already
        be validated; ``encoder`` is the query encoder of the same vocabulary, to share."""
        self._arrays = arrays
        self._params = params
        self._analyzer = analyzer
        self._doc_ids = doc_ids
        self._cache_impacts = bool(cache_impacts)
        if encoder is None:
            encoder = _core.QueryEncoder(
                analyzer.to_core(), arrays["vocab_bytes"], arrays["vocab_offsets"]
            )
        self._encoder = encoder
        doc_lengths = arrays["doc_lengths"]
        self._external_statistics = statistics is not None
        if statistics is None:
            statistics = (
                CollectionStats(len(doc_lengths), int(doc_lengths.sum())),
                arrays["doc_freqs"],
            )
        self._statistics, doc_freqs = statistics
        self._idf = kernels.term_idf(doc_freqs, self._statistics.n_docs, params.method)
        self._factors = kernels.doc_factors(
            doc_lengths, self._statistics.avg_doc_length, params.method, params.k1, params.b
        )
        method = kernels.METHODS[params.method]
        self._scoring = (method, float(params.k1), float(params.delta))
        impacts = _NO_IMPACTS
        if self._cache_impacts:
            impacts = kernels.impacts_from_postings(
                arrays["posting_offsets"],
                arrays["postings"],
                arrays["doc_freqs"],
                self._factors,
                *self._scoring,
            )
        # The kernels' view of the postings (see ``_kernels.search_batch``).
        layout = (
            arrays["posting_offsets"],
            arrays["postings"],
            self._factors,
            *impacts,
            self._cache_impacts,
        )
        self._searcher = PostingsSearcher(
            self._idf, arrays["doc_freqs"], layout, self._scoring, len(doc_lengths)
        )

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

        Raises
        ------
        ValueError
            Empty corpus, bad parameters, duplicate or partly missing ``_id``s.
        TypeError
            A document that is not ``str`` or a dict of ``str``.
        """
        params = BM25Params(method=method, k1=k1, b=b, delta=delta)
        analyzer = analyzer if analyzer is not None else AnalyzerConfig()
        builder = _core.IndexBuilder(analyzer.to_core(), check_threads(num_threads))
        ids: list[str | None] = []
        total = len(corpus) if isinstance(corpus, Sequence) else None
        with tqdm(total=total, unit="doc", desc="indexing", disable=not show_progress) as bar:
            for texts, batch_ids in iter_batches(corpus, batch_size):
                builder.add(texts)
                ids.extend(batch_ids)
                bar.update(len(texts))
        if not ids:
            raise ValueError("the corpus is empty; give at least one document")
        arrays = builder.finish()
        cache = _auto_cache(arrays, mmap=False) if cache_impacts is None else cache_impacts
        return cls(arrays, params, analyzer, DocIds.from_list(ids), cache)

    # -- properties ---------------------------------------------------------------------------

    @property
    def params(self) -> BM25Params:
        """Scoring parameters."""
        return self._params

    @property
    def analyzer(self) -> AnalyzerConfig:
        """Text analysis settings of documents and queries."""
        return self._analyzer

    @property
    def doc_ids(self) -> DocIds:
        """``doc_ids[position]``: the corpus ``_id`` of a result position."""
        return self._doc_ids

    @property
    def num_documents(self) -> int:
        return len(self._doc_ids)

    @property
    def num_terms(self) -> int:
        return len(self._arrays["doc_freqs"])

    @property
    def num_postings(self) -> int:
        return int(self._arrays["doc_freqs"].sum())

    @property
    def doc_freqs(self) -> np.ndarray:
        """int32 ``(num_terms,)``, read-only: the documents of this index holding each term
        (its own counts, whatever ``with_statistics`` scores with)."""
        view = self._arrays["doc_freqs"].view()
        view.flags.writeable = False
        return view

    @property
    def avg_doc_length(self) -> float:
        """Mean number of indexed terms per document that scores use: ``total_length /
        n_docs`` of ``statistics``."""
        return self._statistics.avg_doc_length

    @property
    def statistics(self) -> CollectionStats:
        """The collection statistics the scores use: this index's own documents, or those given
        to ``with_statistics``."""
        return self._statistics

    @property
    def terms(self) -> PackedStrings:
        """The analysed terms, by term id (``terms[term_id(t)] == t``)."""
        return PackedStrings.from_arrays(self._arrays, self.num_terms, "vocab")

    @property
    def doc_lengths(self) -> np.ndarray:
        """int32 ``(n_docs,)``, read-only: the number of indexed terms of each document."""
        view = self._arrays["doc_lengths"].view()
        view.flags.writeable = False
        return view

    def __len__(self) -> int:
        return self.num_documents

    def __repr__(self) -> str:
        p = self._params
        return (
            f"BM25Index({self.num_documents} documents, {self.num_terms} terms, "
            f"method={p.method!r}, k1={p.k1}, b={p.b})"
        )

    def term_id(self, term: str) -> int:
        """Id of an analysed term, or -1 when it is not in the index."""
        return int(self._encoder.term_id(term))

    def doc_freq(self, term: str) -> int:
        """Number of this index's documents holding an analysed term (0 when absent): its
        postings, whatever the statistics the scores use."""
        t = self.term_id(term)
        return int(self._arrays["doc_freqs"][t]) if t >= 0 else 0

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
            Hits per query, >= 1. Rows are padded (id -1, score -inf) when fewer documents
            hold any query term, e.g. ``k`` above the number of documents, or a query made only
            of unknown words or stopwords; an empty or blank query is such a query (its row is
            all padding), in a batch too.
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
            ``ids`` int64 and ``scores`` float32, shape ``(n_queries, k)``.

        Raises
        ------
        ValueError
            ``k < 1``, or ``allowed`` of the wrong shape or not C-contiguous.
        TypeError
            Queries that are not a str or a batch of str (``checks.check_queries``), or
            ``allowed`` that is not a numpy bool array.
        """
        texts = check_queries(queries)
        k = check_k(k)
        terms, weights, offsets = self._encoder.encode(texts)
        return self._searcher.search((terms, weights, offsets), k, num_threads, allowed=allowed)

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
        if not isinstance(stats, CollectionStats):
            raise TypeError(f"stats must be a CollectionStats, got {type(stats).__name__}")
        if stats.n_docs < 1:
            raise ValueError("stats.n_docs must be >= 1: BM25 scores need at least one document")
        if not isinstance(doc_freqs, np.ndarray) or doc_freqs.dtype != np.int64:
            got = doc_freqs.dtype if isinstance(doc_freqs, np.ndarray) else type(doc_freqs)
            raise TypeError(f"doc_freqs must be an int64 numpy array, got {got}")
        if doc_freqs.shape != (self.num_terms,):
            raise ValueError(
                f"doc_freqs must have shape ({self.num_terms},), one count per term id of this "
                f"index (aligned with its terms), got {doc_freqs.shape}"
            )
        bad = np.flatnonzero((doc_freqs < 0) | (doc_freqs > stats.n_docs))
        if len(bad):
            term = int(bad[0])
            raise ValueError(
                f"doc_freqs[{term}] (term {self.terms[term]!r}) is {int(doc_freqs[term])}, "
                f"outside [0, stats.n_docs={stats.n_docs}]"
            )
        return BM25Index(
            self._arrays,
            self._params,
            self._analyzer,
            self._doc_ids,
            self._cache_impacts,
            encoder=self._encoder,
            statistics=(stats, doc_freqs),
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
        arrays = {name: self._arrays[name] for name in _INDEX_ARRAYS}
        arrays.update(self._doc_ids.arrays())
        metadata: dict[str, Any] = {
            "params": asdict(self._params),
            "analyzer": self._analyzer.to_dict(),
            "stats": {
                "num_documents": self.num_documents,
                "num_terms": self.num_terms,
                "num_postings": self.num_postings,
                "avg_doc_length": self.avg_doc_length,
            },
            "doc_ids": self._doc_ids.mode,
        }
        write_index_dir(path, FORMAT, FORMAT_VERSION, metadata, arrays)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        mmap: bool = False,
        verify: bool = True,
        cache_impacts: bool | None = None,
    ) -> BM25Index:
        """Read an index saved by ``save``.

        Parameters
        ----------
        path : path-like
            The index directory.
        mmap : bool
            Memory-map the large arrays read-only instead of reading them.
        verify : bool
            Check every file's sha256 (one pass over the data). The structure of every posting
            list is checked either way, so a corrupt index never reaches the kernels.
        cache_impacts : bool, optional
            As in ``build``; None caches unless ``mmap`` is set or the cache would exceed
            ``IMPACT_CACHE_MAX_BYTES``.

        Raises
        ------
        IndexFormatError
            The directory is missing, truncated, corrupt, or not a BM25 index of this format.
        """
        manifest, arrays = read_index_dir(path, FORMAT, FORMAT_VERSION, mmap=mmap, verify=verify)
        try:
            saved_params = manifest["params"]
            # Every parameter must be recorded: a missing one would silently take its default.
            if not isinstance(saved_params, dict) or set(saved_params) != _PARAM_NAMES:
                raise ValueError(f"params {saved_params!r} must set exactly {sorted(_PARAM_NAMES)}")
            params = BM25Params(**saved_params)
            analyzer = AnalyzerConfig.from_dict(manifest["analyzer"])
            analyzer.to_core()
            n_docs = int(manifest["stats"]["num_documents"])
            saved_ids = manifest["doc_ids"]
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexFormatError(
                f"{path}: bad manifest entry ({exc}); rebuild the index"
            ) from None
        _check_arrays(path, arrays, n_docs)
        doc_ids = DocIds.from_saved(path, saved_ids, arrays, n_docs)
        cache = _auto_cache(arrays, mmap=mmap) if cache_impacts is None else cache_impacts
        try:
            return cls(arrays, params, analyzer, doc_ids, cache)
        except ValueError as exc:  # the vocabulary rejected by the C++ term table
            raise IndexFormatError(f"{path}: {exc}; rebuild the index") from None


def _auto_cache(arrays: dict[str, np.ndarray], *, mmap: bool) -> bool:
    return not mmap and 8 * int(arrays["doc_freqs"].sum()) <= IMPACT_CACHE_MAX_BYTES


def _check_arrays(path: str | os.PathLike[str], arrays: dict[str, np.ndarray], n_docs: int) -> None:
    """Raise IndexFormatError unless the arrays form a consistent index of ``n_docs`` docs."""

    def fail(what: str) -> IndexFormatError:
        return IndexFormatError(f"{path}: {what}; the index is corrupt, rebuild it")

    expected = dict(_INDEX_ARRAYS)
    if "doc_id_bytes" in arrays or "doc_id_offsets" in arrays:
        expected.update(doc_id_bytes=np.uint8, doc_id_offsets=np.int64)
    if set(arrays) != set(expected):
        raise fail(f"expected arrays {sorted(expected)}, found {sorted(arrays)}")
    for name, dtype in expected.items():
        if arrays[name].dtype != dtype or arrays[name].ndim != 1:
            raise fail(f"{name} is {arrays[name].dtype} with {arrays[name].ndim} dims")
    n_terms = len(arrays["doc_freqs"])
    if n_docs < 1 or len(arrays["doc_lengths"]) != n_docs:
        raise fail(f"doc_lengths has {len(arrays['doc_lengths'])} entries for {n_docs} documents")
    for offsets, data, count in (
        ("vocab_offsets", "vocab_bytes", n_terms),
        ("posting_offsets", "postings", n_terms),
    ):
        if not delimits(arrays[offsets], arrays[data], count):
            raise fail(f"{offsets} does not delimit {data}")
    if np.any(arrays["doc_lengths"] < 0) or np.any(arrays["doc_freqs"] < 1):
        raise fail("negative document lengths or empty posting lists")
    # Always, whatever ``verify`` says: the kernels index without bounds checks, so a
    # malformed posting list must never reach them (one pass, ~17 ms per 10 MB of postings).
    bad = kernels.check_postings(
        arrays["posting_offsets"], arrays["postings"], arrays["doc_freqs"], n_docs
    )
    if bad >= 0:
        raise fail(f"the postings of term {bad} are malformed")
