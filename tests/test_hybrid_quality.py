"""The ``hybrid`` retriever on SciFact: BM25 + dense fused beats both legs and the RRF figure.

Uses the embedding cache, so only the first run in a machine's life encodes the corpus.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hybrid_engine.evaluation import load_beir
from hybrid_engine.evaluation.runner import evaluate_retriever
from hybrid_engine.models.bi_encoder import Encoder

pytestmark = pytest.mark.slow

RRF_NDCG10 = 0.714  # BM25 + dense RRF k=60 on SciFact test, measured here before


def test_hybrid_beats_both_legs_on_scifact(shared_data: Path, encoder: Encoder) -> None:
    folder = shared_data / "beir" / "scifact"
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent")
    dataset = load_beir(folder)
    figures = {
        name: evaluate_retriever(dataset, name, metrics=["ndcg@10"]).metrics["ndcg@10"]
        for name in ("bm25", "dense", "hybrid")
    }
    print(f"\nscifact nDCG@10: {figures}")
    assert figures["hybrid"] >= RRF_NDCG10
    assert figures["hybrid"] >= max(figures["bm25"], figures["dense"])
