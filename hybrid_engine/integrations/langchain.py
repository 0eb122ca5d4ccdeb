"""LangChain adapters of the live ``HybridIndex``: a retriever (``HybridRetriever``) and a
vector store (``HybridVectorStore``) whose ``add_documents`` and ``delete`` change the index.

Both return ``langchain_core.documents.Document``\\ s built the same way from a hit
(``Hit``): ``page_content`` is the text the engine indexed (the title, a space and the text;
the text alone without a title), ``id`` the document id, and ``metadata`` the document's
metadata fields plus ``"id"``, ``"score"`` (the search's: fused, reranked or MMR's; NaN
from ``get_by_ids``, which is no search) and ``"title"`` (``""`` where none); those three
keys win over metadata fields of the same names.

Needs the ``langchain`` extra (``pip install 'hybrid-engine[langchain]'``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, field_validator

from hybrid_engine import Hit, HybridIndex
from hybrid_engine.integrations._search import check_search_options, hit_text

__all__ = ["DEFAULT_K", "RESERVED_KEYS", "HybridRetriever", "HybridVectorStore", "hit_document"]

DEFAULT_K = 4
"""Documents per query when ``k`` is not given: LangChain's usual."""

RESERVED_KEYS = ("id", "score", "title")
"""Metadata keys a returned ``Document`` sets from the hit."""


def hit_document(hit: Hit) -> Document:
    """The LangChain ``Document`` of one hit (the module docstring describes its fields)."""
    metadata = {**hit.metadata, "id": hit.id, "score": hit.score, "title": hit.title}
    return Document(page_content=hit_text(hit), metadata=metadata, id=hit.id)


def _search(engine: HybridIndex, query: str, options: Mapping[str, Any]) -> list[Hit]:
    """The hits of one query, best first."""
    return engine.search(query, **options).hits()[0]


class HybridRetriever(BaseRetriever):
    """A LangChain retriever over a live ``HybridIndex``: ``invoke(query)`` returns the hits
    of ``engine.search(query, **search_kwargs)`` as ``Document``\\ s, best first.

    Attributes
    ----------
    engine : HybridIndex
        Searched on its last commit at each call (changes committed since are seen).
    search_kwargs : dict
        ``HybridIndex.search`` options: ``k`` (default ``DEFAULT_K``), ``filter`` (the
        engine's dialect, docs/filters.md), ``rerank``, ``mmr``, ``fusion``, ``weights``...
        Checked when the retriever is made (an unknown key is a ValueError); keyword
        arguments of ``invoke`` override them for one call.

    Examples
    --------
    >>> retriever = HybridRetriever(engine=engine, search_kwargs={"k": 3, "filter": {"year": 2021}})
    >>> retriever.invoke("where do cats sit")  # doctest: +SKIP
    [Document(id='d1', metadata={'year': 2021, 'id': 'd1', 'score': ..., 'title': 'Cats'}, ...)]

    Notes
    -----
    Thread-safe as ``HybridIndex.search`` is; LangChain's async ``ainvoke`` awaits
    ``HybridIndex.asearch``, which runs the search in a worker thread.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: HybridIndex
    search_kwargs: dict[str, Any] = Field(default_factory=lambda: {"k": DEFAULT_K})

    @field_validator("search_kwargs")
    @classmethod
    def _known_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        return check_search_options(value, where="search_kwargs")

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        options = {"k": DEFAULT_K, **self.search_kwargs, **kwargs}
        check_search_options(options, where="the retriever's keyword arguments")
        return [hit_document(hit) for hit in _search(self.engine, query, options)]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        """``_get_relevant_documents`` through ``HybridIndex.asearch``: ``ainvoke`` never
        blocks the event loop."""
        options = {"k": DEFAULT_K, **self.search_kwargs, **kwargs}
        check_search_options(options, where="the retriever's keyword arguments")
        result = await self.engine.asearch(query, **options)
        return [hit_document(hit) for hit in result.hits()[0]]


class HybridVectorStore(VectorStore):
    """A LangChain vector store over a live ``HybridIndex``.

    ``add_texts``/``add_documents`` upsert then commit (the documents are searchable and, in
    an engine attached to a directory, durable when they return), ``delete`` deletes then
    commits, ``get_by_ids`` reads committed documents by id; the searches return
    ``Document``\\ s as the module docstring describes, with the search's score.
    ``as_retriever()`` is LangChain's ``VectorStoreRetriever``
    (``search_type`` ``"similarity"``, ``"mmr"``, or ``"similarity_score_threshold"``, whose
    ``score_threshold`` compares the engine's relevance: the fused score on the [0, 1] scale
    of every fusion method, ``HybridResult.relevance``, docs/fusion.md).

    Parameters
    ----------
    engine : HybridIndex
        The live index; shared, not copied. It embeds texts with its own encoders, so the
        store has no ``embeddings``.

    Notes
    -----
    Searches are thread-safe; changes are serialized by the engine (one writer).
    """

    def __init__(self, engine: HybridIndex) -> None:
        if not isinstance(engine, HybridIndex):
            raise TypeError(f"engine must be a HybridIndex, got {type(engine).__name__}")
        self.engine = engine

    @property
    def embeddings(self) -> Embeddings | None:
        """None: the engine encodes texts and queries with its own encoders."""
        return None

    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Upsert texts (as documents without title) and commit.

        Parameters
        ----------
        texts : iterable of str
        metadatas : list of dict, optional
            One per text: its metadata fields (values as docs/filters.md allows; the keys
            ``RESERVED_KEYS`` are refused, since returned documents set them).
        ids : list of str or None, optional
            One per text; a missing list, or a None in it, gets a new UUID4 string from the
            engine (``ids.new_id``). A text whose id is in the index replaces that document.
        **kwargs
            Passed to ``HybridIndex.commit`` (``embedding_cache``, ``num_threads``,
            ``show_progress``).

        Returns
        -------
        list of str
            The ids, in the order of ``texts``.

        Raises
        ------
        ValueError
            ``metadatas`` or ``ids`` of another length than ``texts``, a reserved metadata
            key, or what ``HybridIndex.upsert`` raises (nothing is staged then).
        """
        staged = self.engine.upsert(_documents(texts, metadatas, ids))
        self.engine.commit(**kwargs)
        return staged

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete documents by id and commit.

        Parameters
        ----------
        ids : list of str
            Required: deleting everything is not offered (build a new engine instead).
        **kwargs
            ``missing_ok`` (bool, default False) as in ``HybridIndex.delete``.

        Returns
        -------
        bool
            True.

        Raises
        ------
        ValueError
            ``ids`` is None.
        KeyError
            Ids not in the index, unless ``missing_ok=True``; nothing is deleted then.
        """
        if ids is None:
            raise ValueError("give the ids to delete; deleting every document is not offered")
        self.engine.delete(ids, **kwargs)
        self.engine.commit()
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents of the last commit with these ids (``HybridIndex.get``); ids not in
        it are skipped, without error, as LangChain asks.

        Returns
        -------
        list of Document
            Built as search results are (the module docstring), in the order of ``ids`` (an
            id given twice comes back twice), with ``metadata["score"]`` NaN: a lookup is no
            search.

        Raises
        ------
        TypeError
            ``ids`` is a single ``str``, or holds something other than ``str``.
        """
        return [hit_document(hit) for hit in self.engine.get(ids, missing_ok=True)]

    def similarity_search(
        self, query: str, k: int = DEFAULT_K, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` best documents for ``query``, best first.

        ``filter`` is the engine's dialect (docs/filters.md); other keyword arguments are
        ``HybridIndex.search`` options (``rerank``, ``fusion``, ``weights``...).
        """
        return [doc for doc, _ in self.similarity_search_with_score(query, k, filter, **kwargs)]

    def similarity_search_with_score(
        self, query: str, k: int = DEFAULT_K, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """``similarity_search`` with each document's score (higher is better)."""
        options = check_search_options({"k": k, "filter": filter, **kwargs}, where="the search")
        return [(hit_document(hit), hit.score) for hit in _search(self.engine, query, options)]

    async def asimilarity_search(
        self, query: str, k: int = DEFAULT_K, filter: Any = None, **kwargs: Any
    ) -> list[Document]:
        """``similarity_search`` through ``HybridIndex.asearch`` (the event loop never
        waits on the search)."""
        scored = await self.asimilarity_search_with_score(query, k, filter, **kwargs)
        return [doc for doc, _ in scored]

    async def asimilarity_search_with_score(
        self, query: str, k: int = DEFAULT_K, filter: Any = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """``similarity_search_with_score`` through ``HybridIndex.asearch``."""
        options = check_search_options({"k": k, "filter": filter, **kwargs}, where="the search")
        result = await self.engine.asearch(query, **options)
        return [(hit_document(hit), hit.score) for hit in result.hits()[0]]

    def _similarity_search_with_relevance_scores(
        self, query: str, k: int = DEFAULT_K, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` best documents with their relevance in [0, 1] (``HybridResult.relevance``),
        best first: what LangChain's ``similarity_search_with_relevance_scores`` and the
        ``"similarity_score_threshold"`` retriever filter by ``score_threshold``."""
        options = check_search_options({"k": k, **kwargs}, where="the search")
        result = self.engine.search(query, **options)
        assert result.relevance is not None  # a search always sets it
        return [
            (hit_document(hit), float(value))
            for hit, value in zip(result.hits()[0], result.relevance[0], strict=False)
        ]

    async def _asimilarity_search_with_relevance_scores(
        self, query: str, k: int = DEFAULT_K, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """``_similarity_search_with_relevance_scores`` in an executor thread."""
        return await run_in_executor(
            None, self._similarity_search_with_relevance_scores, query, k, **kwargs
        )

    def max_marginal_relevance_search(
        self,
        query: str,
        k: int = DEFAULT_K,
        fetch_k: int = 20,
        lambda_mult: float = 0.5,
        filter: Any = None,
        **kwargs: Any,
    ) -> list[Document]:
        """``k`` documents picked by the engine's MMR (``search(mmr=lambda_mult,
        mmr_candidates=fetch_k)``: 1 is pure relevance, 0 pure diversity); needs the dense
        leg."""
        options = {"mmr": lambda_mult, "mmr_candidates": fetch_k, **kwargs}
        return self.similarity_search(query, k, filter, **options)

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings | None = None,
        metadatas: list[dict[str, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> HybridVectorStore:
        """A store over a new engine of ``texts`` (with ``metadatas`` and ``ids`` as in
        ``add_texts``), built by ``HybridIndex.build(documents, **kwargs)`` (``retrievers``,
        ``encoder``, ``bm25_options``...). ``save`` the engine (``store.engine``) to make it
        durable.

        Parameters
        ----------
        embedding : None
            Must be None: the engine encodes with its own ``encoder`` (a ``TextEncoder``
            given in ``kwargs``; the prepared default when none).

        Raises
        ------
        TypeError
            ``embedding`` is not None.
        ValueError
            No texts, or what ``add_texts`` and ``HybridIndex.build`` raise.
        """
        if embedding is not None:
            raise TypeError(
                "HybridVectorStore encodes with the engine's own encoder; pass embedding=None "
                "and a hybrid_engine TextEncoder as encoder=... (the prepared default if none)"
            )
        if not texts:
            raise ValueError("from_texts needs at least one text")
        return cls(HybridIndex.build(_documents(texts, metadatas, ids), **kwargs))


def _documents(
    texts: Iterable[str],
    metadatas: Sequence[Mapping[str, Any] | None] | None,
    ids: Sequence[str | None] | None,
) -> list[dict[str, Any]]:
    """Engine documents (no title) of texts, without ``_id`` where ``ids`` has none (the
    engine gives those a UUID4 string); the checks of ``HybridVectorStore.add_texts``."""
    texts = list(texts)
    metadata_list = [None] * len(texts) if metadatas is None else list(metadatas)
    id_list = [None] * len(texts) if ids is None else list(ids)
    for name, given in (("metadatas", metadata_list), ("ids", id_list)):
        if len(given) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(given)} {name}; give one per text")
    documents = []
    for position, (doc_id, text, metadata) in enumerate(
        zip(id_list, texts, metadata_list, strict=True)
    ):
        reserved = sorted(set(metadata or {}) & set(RESERVED_KEYS))
        if reserved:
            named = f"document {doc_id!r}" if doc_id is not None else f"text {position + 1}"
            raise ValueError(
                f"{named} has metadata keys {reserved}, which returned documents set from the "
                "hit; rename those fields"
            )
        document: dict[str, Any] = {"text": text, "metadata": dict(metadata or {})}
        if doc_id is not None:
            document["_id"] = doc_id
        documents.append(document)
    return documents
