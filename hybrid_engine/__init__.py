"""hybrid_engine: embedded, CPU-only hybrid retrieval."""

from hybrid_engine._moved import install_moved_modules
from hybrid_engine._version import __version__
from hybrid_engine.dense import DenseIndex, EmbeddingCache
from hybrid_engine.engine import HybridIndex
from hybrid_engine.errors import (
    BatcherFullError,
    DatasetError,
    DegradedEngineError,
    DegradedWarning,
    DuplicateIdError,
    EncoderRefusedError,
    HybridEngineError,
    IndexFormatError,
    Int8DroppedWarning,
    ModelNotFoundError,
    PinnedEngineError,
    RefusedModelWarning,
    RerankerRefusedWarning,
    SelfQueryWarning,
    ShardUnavailableError,
    StageError,
    UnknownIdError,
    UnpreparedGenerationError,
    WriterLockedError,
)
from hybrid_engine.feedback import RM3, Rocchio
from hybrid_engine.lexical import Analyzer, AnalyzerConfig, BM25Index, BM25Params
from hybrid_engine.live import MergePolicy, StagedChanges
from hybrid_engine.metadata import Filter, MetadataColumns
from hybrid_engine.models import CrossEncoder, Encoder, SpladeEncoder
from hybrid_engine.parents import (
    ChunkHit,
    ContextSpan,
    ParentDocumentIndex,
    ParentHit,
    ParentSearchResult,
)
from hybrid_engine.pipeline import (
    DEFAULT_DEPTH,
    DEFAULT_METHOD,
    RERANK_DEPTH,
    SEARCH_OPTIONS,
    HybridResult,
    Stack,
    fuse,
    mmr,
    rerank,
)
from hybrid_engine.result import PAD_ID, Hit, SearchResult, SparseVectors
from hybrid_engine.sparse import SpladeIndex

install_moved_modules()  # old module paths still import (_moved.MOVED)

__all__ = [
    "DEFAULT_DEPTH",
    "DEFAULT_METHOD",
    "PAD_ID",
    "RERANK_DEPTH",
    "RM3",
    "SEARCH_OPTIONS",
    "Analyzer",
    "AnalyzerConfig",
    "BM25Index",
    "BM25Params",
    "BatcherFullError",
    "ChunkHit",
    "ContextSpan",
    "CrossEncoder",
    "DatasetError",
    "DegradedEngineError",
    "DegradedWarning",
    "DenseIndex",
    "DuplicateIdError",
    "EmbeddingCache",
    "Encoder",
    "EncoderRefusedError",
    "Filter",
    "Hit",
    "HybridEngineError",
    "HybridIndex",
    "HybridResult",
    "IndexFormatError",
    "Int8DroppedWarning",
    "MergePolicy",
    "MetadataColumns",
    "ModelNotFoundError",
    "ParentDocumentIndex",
    "ParentHit",
    "ParentSearchResult",
    "PinnedEngineError",
    "RefusedModelWarning",
    "RerankerRefusedWarning",
    "Rocchio",
    "SearchResult",
    "SelfQueryWarning",
    "ShardUnavailableError",
    "SparseVectors",
    "SpladeEncoder",
    "SpladeIndex",
    "Stack",
    "StageError",
    "StagedChanges",
    "UnknownIdError",
    "UnpreparedGenerationError",
    "WriterLockedError",
    "__version__",
    "fuse",
    "mmr",
    "rerank",
]
