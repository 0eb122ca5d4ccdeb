"""ONNX models: the model store, one session helper, the bi-encoder, the SPLADE encoder and the
cross-encoder. Their preparation (export from PyTorch) lives in ``models.export``."""

from hybrid_engine.models.bi_encoder import Encoder, RefusedModelWarning
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.models.splade import SpladeEncoder
from hybrid_engine.models.store import ModelNotFoundError

__all__ = [
    "CrossEncoder",
    "Encoder",
    "ModelNotFoundError",
    "RefusedModelWarning",
    "SpladeEncoder",
]
