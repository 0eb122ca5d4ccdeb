"""What a ``BM25Index`` holds: its index arrays, parameters, analyzer, ids, query encoder and
scoring state, and the read-only properties over them."""

from __future__ import annotations

import threading
from functools import cached_property

import numpy as np

from hybrid_engine import _core
from hybrid_engine.corpus import DocIds, IndexedDocuments
from hybrid_engine.lexical.analysis import Analyzer, AnalyzerConfig
from hybrid_engine.lexical.params import BM25Params
from hybrid_engine.lexical.postings import PostingsSearcher
from hybrid_engine.lexical.postings_check import PostingsCheck
from hybrid_engine.lexical.scoring import bm25_searcher
from hybrid_engine.lexical.statistics import CollectionStats
from hybrid_engine.lexical.word_terms import MappedQueryEncoder
from hybrid_engine.packed import PackedStrings


class BM25Attributes(IndexedDocuments):
    """The state of a ``BM25Index`` and its properties."""

    def __init__(
        self,
        arrays: dict[str, np.ndarray],
        params: BM25Params,
        analyzer: AnalyzerConfig,
        doc_ids: DocIds,
        cache_impacts: bool,
        *,
        encoder: _core.QueryEncoder | MappedQueryEncoder | None = None,
        statistics: tuple[CollectionStats, np.ndarray] | None = None,
        check: PostingsCheck | None = None,
    ) -> None:
        """Private: use ``BM25Index.build``, ``load`` or ``with_statistics``. ``arrays`` (and
        ``statistics``, the collection's stats and per-term document frequencies) must already
        be validated, but for the posting lists that ``check`` (when given) checks on first use
        and the contents of ``vocab_slots`` (which lookups survive, see ``format``);
        ``encoder`` is the query encoder of the same vocabulary, to share."""
        self._arrays = arrays
        self._params = params
        self._analyzer = analyzer
        self._doc_ids = doc_ids
        self._cache_impacts = bool(cache_impacts)
        self._check = check
        if encoder is None:
            # Over the arrays in place (the encoder keeps them alive): no copy, no rebuild.
            encoder = _core.QueryEncoder(
                analyzer.to_core(),
                arrays["vocab_bytes"],
                arrays["vocab_offsets"],
                arrays["vocab_slots"],
            )
            word_terms = analyzer.word_terms()
            if word_terms is not None:
                core = _core.Analyzer(analyzer.to_core())
                encoder = MappedQueryEncoder(core, word_terms, encoder)
        self._encoder = encoder
        doc_lengths = arrays["doc_lengths"]
        self._external_statistics = statistics is not None
        if statistics is None:
            statistics = (
                CollectionStats(len(doc_lengths), int(doc_lengths.sum())),
                arrays["doc_freqs"],
            )
        self._statistics, self._scored_doc_freqs = statistics
        self._built: PostingsSearcher | None = None
        self._building = threading.Lock()

    @property
    def _searcher(self) -> PostingsSearcher:
        """The posting-list searcher, built by the first search (its impact cache included):
        an index that is only ever searched through ``with_statistics`` views, as a live
        engine's segments are, never builds one of its own."""
        if self._built is None:
            with self._building:
                if self._built is None:
                    self._built = bm25_searcher(
                        self._arrays, self._params, self._statistics, self._scored_doc_freqs,
                        self._cache_impacts, self._check,
                    )  # fmt: skip
        return self._built

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
    def num_terms(self) -> int:
        return len(self._arrays["doc_freqs"])

    @property
    def num_postings(self) -> int:
        return int(self._arrays["doc_freqs"].sum())

    @property
    def has_positions(self) -> bool:
        """Whether the index records positions (``build(positions=True)``): what phrase
        queries need."""
        return "positions" in self._arrays

    @cached_property
    def _phrase_analyzer(self) -> Analyzer:
        return Analyzer(self._analyzer)

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
            f"{type(self).__name__}({self.num_documents} documents, {self.num_terms} terms, "
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
