"""Adapters of the live ``HybridIndex`` to retrieval frameworks: LangChain
(``integrations.langchain``: a retriever and a vector store) and LlamaIndex
(``integrations.llamaindex``: a retriever and the ``MetadataFilters`` translation).

Each adapter module imports its framework, an optional dependency (the ``langchain`` and
``llamaindex`` extras), so this package re-exports nothing: import the module you use.
Nothing in ``hybrid_engine`` imports these modules; they use only its public API.
"""
