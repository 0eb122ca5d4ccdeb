"""Training the engine's own models (the ``export`` extra; PyTorch lazily): the cross-encoder
reranker, and a fine-tuned bi-encoder for the dense leg."""

from hybrid_engine.training.encoder_loop import EncoderSettings
from hybrid_engine.training.encoder_trainer import EncoderRefusedError, train_encoder
from hybrid_engine.training.record import TRAINING_RECORD
from hybrid_engine.training.trainer import train_reranker
from hybrid_engine.training.validation import evaluate_reranker

__all__ = [
    "TRAINING_RECORD",
    "EncoderRefusedError",
    "EncoderSettings",
    "evaluate_reranker",
    "train_encoder",
    "train_reranker",
]
