"""Chunking: parent texts cut into chunks of whole sentences under the bi-encoder's token
budget, with exact character offsets (sentence boundaries from sentencex)."""

from hybrid_engine.chunking.chunk import Chunk
from hybrid_engine.chunking.chunker import DEFAULT_MAX_TOKENS, DEFAULT_OVERLAP_TOKENS, Chunker
from hybrid_engine.chunking.sentences import sentence_spans

__all__ = ["DEFAULT_MAX_TOKENS", "DEFAULT_OVERLAP_TOKENS", "Chunk", "Chunker", "sentence_spans"]
