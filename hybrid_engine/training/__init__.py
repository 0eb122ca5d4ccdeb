"""Training the engine's own cross-encoder reranker (the ``export`` extra; PyTorch lazily)."""

from hybrid_engine.training.trainer import (
    TRAINING_RECORD,
    TorchScorer,
    evaluate_reranker,
    train_reranker,
)

__all__ = ["TRAINING_RECORD", "TorchScorer", "evaluate_reranker", "train_reranker"]
