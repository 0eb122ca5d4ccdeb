"""The gate's figures for a reranker over an engine's fused candidates, and the validation of
a freshly prepared model in the configuration that will serve it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.evaluation.gate import GateVerdict, validate_reranker
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.pipeline.rerank import RERANK_DEPTH
from hybrid_engine.protocols import PairScorer
from hybrid_engine.training.examples import TrainingSet
from hybrid_engine.training.negatives import fused_top


def evaluate_reranker(
    engine: HybridIndex,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    passages: Sequence[str],
    cross_encoder: PairScorer,
    *,
    depth: int = RERANK_DEPTH,
) -> GateVerdict:
    """The gate's figures for ``cross_encoder`` reranking the fused top ``depth`` of
    ``queries``.

    Parameters
    ----------
    engine : HybridIndex
        Gives the fused candidates (its default fusion).
    queries : dict of str to str
        Query id to text: validation queries held out of training (or test queries, to report).
    qrels : dict
        Their judgements.
    passages : sequence of str
        The text of each corpus position of ``engine``.
    cross_encoder : PairScorer
        A prepared ``CrossEncoder``, loaded as it is served (or any other scorer, whose
        configuration the verdict then does not record).

    Returns
    -------
    GateVerdict
    """
    query_ids = list(queries)
    texts = [queries[q] for q in query_ids]
    fused = fused_top(engine, texts, depth)
    return validate_reranker(
        fused, texts, passages, cross_encoder, query_ids, engine.doc_ids, qrels, depth=depth
    )


def validate_prepared(
    folder: Path,
    variant: str,
    examples: TrainingSet,
    *,
    max_length: int,
    num_threads: int | None,
) -> GateVerdict:
    """The gate's verdict on the prepared model in ``folder`` (staged or final) as served:
    ONNX Runtime, ``variant``, ``max_length`` tokens per pair with the query-capped truncation
    of ``CrossEncoder``, reranking ``examples``' validation queries."""
    cross_encoder = CrossEncoder.load(
        folder, variant=variant, max_length=max_length, num_threads=num_threads
    )
    return evaluate_reranker(
        examples.engine,
        examples.validation_queries,
        examples.dataset.qrels,
        examples.passages,
        cross_encoder,
    )
