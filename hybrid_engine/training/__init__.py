"""Training the engine's own cross-encoder reranker (the ``export`` extra; PyTorch lazily)."""

from hybrid_engine.training.record import TRAINING_RECORD
from hybrid_engine.training.trainer import train_reranker
from hybrid_engine.training.validation import evaluate_reranker

__all__ = ["TRAINING_RECORD", "evaluate_reranker", "train_reranker"]
