"""The engine object: ``HybridIndex`` (index) with its properties (attributes), its changes,
saving and loading (lifecycle), its on-disk format (format), and the asyncio doors shared by
every index kind (asynchronous). The query stages it runs are in ``hybrid_engine.pipeline``."""

from hybrid_engine.engine.asynchronous import AsyncEngine
from hybrid_engine.engine.index import HybridIndex

__all__ = ["AsyncEngine", "HybridIndex"]
