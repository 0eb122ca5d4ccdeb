"""A sharded index on Ray (the ``ray`` extra): live ``HybridIndex`` shards held by Ray actors,
partitioned by a hash of each document id and searched as one index (docs/scaling.md).

Importing this package does not import Ray; building or opening an index does.
"""

from hybrid_engine.distributed.cluster import ShardUnavailableError
from hybrid_engine.distributed.index import ShardedIndex
from hybrid_engine.distributed.result import ShardedResult

__all__ = ["ShardUnavailableError", "ShardedIndex", "ShardedResult"]
