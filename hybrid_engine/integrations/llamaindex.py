"""A LlamaIndex retriever over the live ``HybridIndex`` (``HybridRetriever``), and the
translation of LlamaIndex ``MetadataFilters`` to the engine's filters
(``to_engine_filter``, from ``llamaindex_filters``).

A hit becomes ``NodeWithScore(node=TextNode(id_=<doc id>, text=..., metadata=...),
score=<the search's score>)``: the text is what the engine indexed (the title, a space and
the text; the text alone without a title), the metadata the document's metadata fields plus
``"title"`` (``""`` where none; it wins over a field of that name, and is left out of what
LlamaIndex shows the LLM and embeds, since the text starts with it).

Needs the ``llamaindex`` extra (``pip install 'hybrid-engine[llamaindex]'``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
from llama_index.core.vector_stores import MetadataFilters

from hybrid_engine import Filter, Hit, HybridIndex
from hybrid_engine.integrations._search import check_search_options, hit_text
from hybrid_engine.integrations.llamaindex_filters import to_engine_filter

__all__ = ["DEFAULT_TOP_K", "HybridRetriever", "hit_node", "to_engine_filter"]

DEFAULT_TOP_K = 2
"""Nodes per query when ``similarity_top_k`` is not given: LlamaIndex's usual."""


def hit_node(hit: Hit) -> NodeWithScore:
    """The LlamaIndex node of one hit (the module docstring describes its fields)."""
    node = TextNode(
        id_=hit.id,
        text=hit_text(hit),
        metadata={**hit.metadata, "title": hit.title},
        excluded_llm_metadata_keys=["title"],
        excluded_embed_metadata_keys=["title"],
    )
    return NodeWithScore(node=node, score=hit.score)


class HybridRetriever(BaseRetriever):
    """A LlamaIndex retriever over a live ``HybridIndex``: ``retrieve(query)`` returns the
    hits of ``engine.search(query, k=similarity_top_k, filter=..., **search_options)`` as
    ``NodeWithScore``\\ s, best first.

    Parameters
    ----------
    engine : HybridIndex
        Searched on its last commit at each call.
    similarity_top_k : int
        Nodes per query (``k``).
    filters : MetadataFilters, dict or Filter, optional
        LlamaIndex filters (translated once by ``to_engine_filter``: an operator the engine
        cannot express is a ValueError here), or a filter in the engine's own dialect.
    callback_manager, verbose
        As in LlamaIndex's ``BaseRetriever``.
    **search_options
        Other ``HybridIndex.search`` options: ``rerank``, ``mmr``, ``fusion``, ``weights``,
        ``depth``... (an unknown one is a ValueError; ``k`` and ``filter`` are set by the
        parameters above).

    Raises
    ------
    TypeError
        ``engine`` is not a ``HybridIndex``, or ``filters`` is of another type.
    ValueError
        An untranslatable filter, one the engine refuses (``Filter.compile``), or an unknown
        search option.

    Notes
    -----
    Thread-safe as ``HybridIndex.search`` is; ``aretrieve`` runs the search in the calling
    thread (LlamaIndex's default).
    """

    def __init__(
        self,
        engine: HybridIndex,
        *,
        similarity_top_k: int = DEFAULT_TOP_K,
        filters: MetadataFilters | Mapping[str, Any] | Filter | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **search_options: Any,
    ) -> None:
        if not isinstance(engine, HybridIndex):
            raise TypeError(f"engine must be a HybridIndex, got {type(engine).__name__}")
        super().__init__(callback_manager=callback_manager, verbose=verbose)
        self.engine = engine
        self.similarity_top_k = similarity_top_k
        self.filter = _engine_filter(filters)
        """The compiled engine filter of ``filters`` (None: every document)."""
        self.search_options = check_search_options(
            search_options, where="HybridRetriever's search options", taken=("k", "filter")
        )

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.engine.search(
            query_bundle.query_str,
            self.similarity_top_k,
            filter=self.filter,
            **self.search_options,
        )
        return [hit_node(hit) for hit in result.hits()[0]]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """``_retrieve`` through ``HybridIndex.asearch``: LlamaIndex's ``aretrieve`` never
        blocks its event loop."""
        result = await self.engine.asearch(
            query_bundle.query_str,
            self.similarity_top_k,
            filter=self.filter,
            **self.search_options,
        )
        return [hit_node(hit) for hit in result.hits()[0]]


def _engine_filter(filters: MetadataFilters | Mapping[str, Any] | Filter | None) -> Filter | None:
    """``HybridRetriever``'s ``filters``, compiled (``Filter.compile`` checks them now)."""
    if filters is None:
        return None
    if isinstance(filters, MetadataFilters):
        return Filter.compile(to_engine_filter(filters))
    if isinstance(filters, (Mapping, Filter)):
        return Filter.compile(filters)
    raise TypeError(
        "filters must be a llama_index MetadataFilters, a dict in the engine's filter dialect "
        f"or a hybrid_engine Filter, got {type(filters).__name__}"
    )
