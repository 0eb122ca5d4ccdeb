"""Document metadata: columns per segment (``MetadataColumns``) and the filters that select
documents by it before top-k (``Filter``, dialect in ``docs/filters.md``)."""

from hybrid_engine.metadata.columns import MetadataColumns
from hybrid_engine.metadata.filters import Filter

__all__ = ["Filter", "MetadataColumns"]
