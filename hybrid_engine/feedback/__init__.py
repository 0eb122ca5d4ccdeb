"""Pseudo-relevance feedback: RM3 query expansion for BM25 and Rocchio for dense vectors, each
a first pass, a query built from its top documents, and a second pass."""

from hybrid_engine.feedback.rm3 import RM3
from hybrid_engine.feedback.rocchio import Rocchio

__all__ = ["RM3", "Rocchio"]
