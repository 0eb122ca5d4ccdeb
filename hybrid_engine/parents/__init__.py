"""Parent-document retrieval: long documents indexed as chunks in the live engine, searched,
added, replaced and deleted as whole documents (issue 12)."""

from hybrid_engine.parents.aggregate import AGGREGATES
from hybrid_engine.parents.fields import RESERVED_PREFIX
from hybrid_engine.parents.index import UNITS, ParentDocumentIndex
from hybrid_engine.parents.result import ChunkHit, ContextSpan, ParentHit, ParentSearchResult

__all__ = [
    "AGGREGATES",
    "RESERVED_PREFIX",
    "UNITS",
    "ChunkHit",
    "ContextSpan",
    "ParentDocumentIndex",
    "ParentHit",
    "ParentSearchResult",
]
