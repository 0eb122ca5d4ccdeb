"""The training set of a reranker: a dataset's split, indexed, divided into training and
validation queries, with the training pairs and their mined negative pools."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from hybrid_engine.corpus import document_text
from hybrid_engine.engine.index import HybridIndex
from hybrid_engine.evaluation.datasets import Dataset, load_beir
from hybrid_engine.evaluation.runner import build_hybrid, documents_with_text
from hybrid_engine.pipeline.rerank import RERANK_DEPTH
from hybrid_engine.training.data import (
    Pair,
    positives,
    qrels_pairs,
    self_supervised_pairs,
    split_queries,
)
from hybrid_engine.training.negatives import mine_pools


@dataclass(frozen=True)
class TrainingSet:
    """What training and validation read.

    Attributes
    ----------
    dataset : Dataset
        The split loaded (its queries and qrels).
    documents : list of dict
        The documents with text, by corpus position (``runner.documents_with_text``).
    passages : list of str
        The text of each corpus position as the cross-encoder reads it.
    engine : HybridIndex
        The default hybrid over ``documents``: it mines negatives and gives the validation
        queries' fused candidates.
    train_ids, validation_ids : list of str
        The split's judged queries, divided (disjoint).
    pairs : list of Pair
        The training pairs.
    pools : list of numpy.ndarray
        Each pair's hard-negative pool (``negatives.mine_pools``).
    """

    dataset: Dataset
    documents: list[dict[str, str]]
    passages: list[str]
    engine: HybridIndex
    train_ids: list[str]
    validation_ids: list[str]
    pairs: list[Pair]
    pools: list[np.ndarray]

    @property
    def validation_queries(self) -> dict[str, str]:
        """Validation query id to text."""
        return {q: self.dataset.queries[q] for q in self.validation_ids}


def gather_training_set(
    dataset_dir: str | os.PathLike[str],
    split: str,
    *,
    supervision: Sequence[str],
    validation_fraction: float,
    max_self_pairs: int | None,
    seed: int,
    num_threads: int | None,
    show_progress: bool,
    log: Callable[[str], None],
    model: str | os.PathLike[str] | None = None,
) -> TrainingSet:
    """Load, index and divide a dataset's split, and mine the negatives of its training pairs.

    Parameters are those of ``trainer.train_reranker``, and ``model``, the prepared
    bi-encoder of the engine's dense leg (the default when None). Self-supervised pairs whose
    document is judged for a validation query are left out, so validation measures unseen
    pairs.

    Raises
    ------
    ValueError
        No training pairs.
    """
    dataset = load_beir(dataset_dir, split)
    documents = documents_with_text(dataset)
    passages = [document_text(doc, i)[0] for i, doc in enumerate(documents)]
    log(f"{dataset.name}: indexing {len(documents)} documents (BM25 + dense)")
    engine = build_hybrid(
        dataset, num_threads=num_threads, show_progress=show_progress, model=model
    )
    judged = positives(dataset.qrels, list(dataset.queries), engine.doc_ids)
    train_ids, validation_ids = split_queries(list(judged), validation_fraction, seed)
    pairs: list[Pair] = []
    if "qrels" in supervision:
        pairs += qrels_pairs(dataset.queries, {q: judged[q] for q in train_ids}, passages)
    if "self" in supervision:
        held_out = {p for q in validation_ids for p in judged[q]}
        pairs += [
            pair
            for pair in self_supervised_pairs(documents, seed=seed, limit=max_self_pairs)
            if pair.source not in held_out
        ]
    if not pairs:
        raise ValueError(
            f"no training pairs: {dataset.name} {split!r} has {len(train_ids)} training queries "
            f"with positives in the corpus; add supervision 'self' or use another split"
        )
    log(f"mining negatives for {len(pairs)} pairs (hybrid top {RERANK_DEPTH})")
    pools = mine_pools(engine, pairs)
    return TrainingSet(
        dataset, documents, passages, engine, train_ids, validation_ids, pairs, pools
    )
