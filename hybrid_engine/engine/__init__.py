"""The engine object: ``HybridIndex`` (index) with its properties (attributes), its changes,
saving and loading (lifecycle), its on-disk format (format), the one ``search`` every index
kind shares (search: ``Searchable``), and the asyncio doors of every kind (asynchronous). The
query stages it runs are in ``hybrid_engine.pipeline``."""

from hybrid_engine.engine.asynchronous import AsyncEngine
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.engine.search import SEARCH_DEFAULTS, Searchable

__all__ = ["SEARCH_DEFAULTS", "AsyncEngine", "HybridIndex", "Searchable"]
