"""Training data of a bi-encoder: each pair's hard negative, and batches free of false
in-batch negatives.

Plain numpy (no PyTorch). A pair's hard-negative pool starts as the reranker's: the hybrid top
``RERANK_DEPTH`` of its query without its judged positives (``negatives.mine_pools``); the
near-duplicate rule then removes every candidate that is the same document as a positive in
all but name:

- its dense cosine to one of the query's positives exceeds ``NEAR_DUPLICATE_COSINE`` (0.95),
  on the base model's L2-normalised document vectors (the engine's dense leg), or
- its normalised text (``normalise_text``: case-folded, whitespace collapsed) equals a
  positive's.

A candidate passing both is taken as unjudged-and-different, hence a negative; one failing
either would teach the model to push away a passage it should pull close.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from hybrid_engine.training.data import Pair

NEAR_DUPLICATE_COSINE = 0.95
"""A candidate this close (dense cosine) to a positive of the query is never its negative."""


def normalise_text(text: str) -> str:
    """``text`` case-folded, its whitespace runs collapsed to one space, stripped."""
    return " ".join(text.casefold().split())


def near_duplicates(
    candidates: np.ndarray,
    positives: Sequence[int],
    vectors: np.ndarray,
    texts: Sequence[str],
    threshold: float = NEAR_DUPLICATE_COSINE,
) -> np.ndarray:
    """Which candidates are near-duplicates of one of ``positives`` (the module's rule).

    Parameters
    ----------
    candidates : numpy.ndarray of int64, shape (n,)
        Corpus positions.
    positives : sequence of int
        Corpus positions of the query's positives.
    vectors : numpy.ndarray of float32, shape (corpus_size, dim)
        L2-normalised document vectors, by corpus position.
    texts : sequence of str
        Document text by corpus position.
    threshold : float
        Cosine above which a candidate is a near-duplicate.

    Returns
    -------
    numpy.ndarray of bool, shape (n,)
    """
    candidates = np.asarray(candidates, dtype=np.int64)
    if len(candidates) == 0 or len(positives) == 0:
        return np.zeros(len(candidates), dtype=bool)
    chosen = np.asarray(list(positives), dtype=np.int64)
    cosine = vectors[candidates] @ vectors[chosen].T
    close = (cosine > threshold).any(axis=1)
    positive_texts = {normalise_text(texts[p]) for p in chosen.tolist()}
    same = np.array([normalise_text(texts[c]) in positive_texts for c in candidates.tolist()])
    return np.asarray(close | same, dtype=bool)


def negative_pools(
    pools: Sequence[np.ndarray],
    pairs: Sequence[Pair],
    vectors: np.ndarray,
    texts: Sequence[str],
    threshold: float = NEAR_DUPLICATE_COSINE,
) -> list[np.ndarray]:
    """Each pair's pool (its hybrid candidates without judged positives) without the
    near-duplicates of its positives, in pool order."""
    return [
        pool[~near_duplicates(pool, sorted(pair.excluded), vectors, texts, threshold)]
        for pool, pair in zip(pools, pairs, strict=True)
    ]


def draw_hard_negatives(
    pools: Sequence[np.ndarray],
    pairs: Sequence[Pair],
    vectors: np.ndarray,
    texts: Sequence[str],
    rng: np.random.Generator,
    threshold: float = NEAR_DUPLICATE_COSINE,
) -> list[int]:
    """One negative per pair: uniform from its pool (``negative_pools``), or, when that pool is
    empty, uniform from the corpus positions that are neither positives nor near-duplicates.

    Raises
    ------
    ValueError
        The whole corpus is positives and near-duplicates of some pair.
    """
    chosen: list[int] = []
    for pool, pair in zip(pools, pairs, strict=True):
        if len(pool) == 0:
            everything = np.arange(len(texts), dtype=np.int64)
            keep = ~near_duplicates(everything, sorted(pair.excluded), vectors, texts, threshold)
            keep[sorted(pair.excluded)] = False
            pool = everything[keep]
            if len(pool) == 0:
                raise ValueError(
                    f"no negative for the query {pair.query[:60]!r}: every document is a "
                    "positive or a near-duplicate of one; use a larger corpus"
                )
        chosen.append(int(pool[int(rng.integers(len(pool)))]))
    return chosen


def distinct_batches(
    queries: Sequence[str],
    documents: Sequence[Collection[int]],
    batch_size: int,
    rng: np.random.Generator,
) -> list[list[int]]:
    """A seeded shuffle of the pairs cut into batches in which no two pairs share a query or a
    document.

    In-batch negatives take every other pair's passages as a pair's negatives, so a batch
    holding two pairs of one query, or a passage judged for another query of the batch, would
    train against a positive. Pairs are taken in shuffled order, each into the first batch
    being filled that it does not clash with; a pair clashing with the batch waits for the
    next one.

    Parameters
    ----------
    queries : sequence of str
        Each pair's query text.
    documents : sequence of collections of int
        Each pair's documents: its positive, its hard negative, and every judged positive of
        its query; two pairs clash when these sets meet.
    batch_size : int
        Most pairs per batch, >= 1.
    rng : numpy.random.Generator
        Seeds the shuffle.

    Returns
    -------
    list of list of int
        Pair indices; every pair exactly once; every batch but possibly the last few full.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    pending = rng.permutation(len(queries)).tolist()
    batches: list[list[int]] = []
    while pending:
        batch: list[int] = []
        seen_queries: set[str] = set()
        seen_documents: set[int] = set()
        waiting: list[int] = []
        for i in pending:
            docs = set(documents[i])
            if (
                len(batch) < batch_size
                and queries[i] not in seen_queries
                and not docs & seen_documents
            ):
                batch.append(i)
                seen_queries.add(queries[i])
                seen_documents |= docs
            else:
                waiting.append(i)
        batches.append(batch)
        pending = waiting
    return batches
