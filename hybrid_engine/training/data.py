"""Training data of a cross-encoder: query groups of one positive passage and mined negatives.

Everything here is plain Python and numpy (no PyTorch): the held-out validation split of the
training queries, labelled pairs from qrels, self-supervised pairs made from the corpus alone,
and negatives mined with the engine's own hybrid retrieval.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from hybrid_engine.evaluation.tuning import FORBIDDEN_SPLITS
from hybrid_engine.result import PAD_ID

NEGATIVE_MODES = ("hard", "random", "mix")
"""How negatives are drawn: from the hybrid top ``depth`` (hard), the whole corpus (random), or
half of each (mix)."""
SUPERVISION = ("qrels", "self")
"""Training data sources: a split's judged positives, and pairs made from the corpus alone."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")
MIN_SENTENCE_WORDS = 6
MAX_SENTENCE_WORDS = 40
MIN_TITLE_WORDS = 4


def check_training_split(split: str, what: str = "a reranker") -> None:
    """ValueError when ``split`` is one the reported figures come from (``"test"``); the
    message says ``what`` was to be trained."""
    if split in FORBIDDEN_SPLITS:
        raise ValueError(
            f"refusing to train {what} on the {split!r} split: train on a training split "
            "(e.g. --split train; its validation queries are held out of it) and report on test"
        )


def check_supervision(split: str, supervision: Sequence[str], what: str = "a reranker") -> None:
    """ValueError when a trainer's ``split`` is refused (``check_training_split``, naming
    ``what``) or ``supervision`` is not a non-empty subset of ``SUPERVISION``."""
    check_training_split(split, what)
    if not supervision or any(s not in SUPERVISION for s in supervision):
        raise ValueError(
            f"supervision must be a non-empty subset of {SUPERVISION}, got {tuple(supervision)}"
        )


def check_validation_fraction(validation_fraction: float) -> None:
    """ValueError when a trainer's share of held-out validation queries is not in (0, 1)."""
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in (0, 1), got {validation_fraction}")


@dataclass(frozen=True)
class Pair:
    """A pseudo- or real query and the passage that answers it.

    Attributes
    ----------
    query : str
        Query text.
    passage : str
        The positive passage's text as the cross-encoder sees it.
    source : int
        Corpus position of the positive document.
    excluded : frozenset of int
        Corpus positions never used as its negatives (every judged positive of the query).
    kind : str
        ``"qrels"``, ``"sentence"`` (a sentence -> the rest of its document) or ``"title"``
        (a title -> its body).
    """

    query: str
    passage: str
    source: int
    excluded: frozenset[int]
    kind: str


def split_queries(
    query_ids: Sequence[str], validation_fraction: float, seed: int
) -> tuple[list[str], list[str]]:
    """Seeded split of query ids into (training, validation), disjoint, in input order.

    The validation part has ``round(fraction * n)`` queries (at least 1 when the fraction is
    positive and there are at least 2 queries), chosen by a permutation of the sorted ids, so it
    depends only on the set of ids and the seed.

    Raises
    ------
    ValueError
        ``validation_fraction`` outside ``[0, 1)``.
    """
    if not 0.0 <= validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in [0, 1), got {validation_fraction}")
    ordered = sorted(set(query_ids))
    n_validation = round(validation_fraction * len(ordered))
    if validation_fraction > 0 and len(ordered) >= 2:
        n_validation = min(max(n_validation, 1), len(ordered) - 1)
    chosen = np.random.default_rng(seed).permutation(len(ordered))[:n_validation]
    held_out = {ordered[i] for i in chosen.tolist()}
    return [q for q in query_ids if q not in held_out], [q for q in query_ids if q in held_out]


def positives(
    qrels: Mapping[str, Mapping[str, int]], query_ids: Sequence[str], doc_ids: Sequence[str]
) -> dict[str, list[int]]:
    """Corpus positions of each query's documents graded > 0, in corpus order; queries none
    of whose positives are in the corpus are left out."""
    position = {doc_id: i for i, doc_id in enumerate(doc_ids)}
    found = {
        q: sorted(
            position[d] for d, grade in qrels.get(q, {}).items() if grade > 0 and d in position
        )
        for q in query_ids
    }
    return {q: p for q, p in found.items() if p}


def qrels_pairs(
    queries: Mapping[str, str], judged: Mapping[str, list[int]], passages: Sequence[str]
) -> list[Pair]:
    """One pair per (query, judged positive) of ``judged`` (see ``positives``)."""
    return [
        Pair(queries[q], passages[p], p, frozenset(found), "qrels")
        for q, found in judged.items()
        for p in found
    ]


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``: split after ``.``, ``!`` or ``?`` before a capital, digit or
    bracket."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def self_supervised_pairs(
    corpus: Sequence[Mapping[str, str]], *, seed: int, limit: int | None = None
) -> list[Pair]:
    """Pairs made from the corpus alone, at most two per document.

    - ``"title"``: a title of at least ``MIN_TITLE_WORDS`` words -> the document's text.
    - ``"sentence"``: one sentence of ``MIN_SENTENCE_WORDS`` to ``MAX_SENTENCE_WORDS`` words,
      drawn with ``seed``, from a text of at least 3 sentences -> the title and the other
      sentences.

    Parameters
    ----------
    corpus : sequence of dict
        Documents with ``"text"`` and optional ``"title"``; positions are corpus positions.
    seed : int
        Seeds the choice of sentence and of the ``limit`` pairs kept.
    limit : int, optional
        Keep at most this many pairs (a seeded sample, in corpus order).

    Returns
    -------
    list of Pair
    """
    rng = np.random.default_rng(seed)
    pairs: list[Pair] = []
    for position, doc in enumerate(corpus):
        title, text = doc.get("title", "") or "", doc.get("text", "") or ""
        if len(title.split()) >= MIN_TITLE_WORDS and text.strip():
            pairs.append(Pair(title, text, position, frozenset({position}), "title"))
        sentences = split_sentences(text)
        usable = [
            i
            for i, s in enumerate(sentences)
            if MIN_SENTENCE_WORDS <= len(s.split()) <= MAX_SENTENCE_WORDS
        ]
        if len(sentences) >= 3 and usable:
            pick = usable[int(rng.integers(len(usable)))]
            rest = " ".join(s for i, s in enumerate(sentences) if i != pick)
            passage = f"{title} {rest}" if title else rest
            pairs.append(
                Pair(sentences[pick], passage, position, frozenset({position}), "sentence")
            )
    if limit is not None and len(pairs) > limit:
        keep = np.sort(rng.choice(len(pairs), size=limit, replace=False))
        pairs = [pairs[i] for i in keep.tolist()]
    return pairs


def candidate_pools(ranked: np.ndarray, pairs: Sequence[Pair]) -> list[np.ndarray]:
    """Each pair's hard-negative pool: its row of ``ranked`` without padding and ``excluded``.

    Parameters
    ----------
    ranked : numpy.ndarray of int64, shape (n_pairs, depth)
        Retrieved corpus positions of each pair's query, best first (``-1`` pads).
    pairs : sequence of Pair
        One per row.
    """
    return [
        np.array([p for p in row.tolist() if p != PAD_ID and p not in pair.excluded], np.int64)
        for row, pair in zip(ranked, pairs, strict=True)
    ]


def draw_negatives(
    pool: np.ndarray,
    excluded: frozenset[int],
    n: int,
    mode: str,
    corpus_size: int,
    rng: np.random.Generator,
) -> list[int]:
    """``n`` distinct negative positions for one pair, none in ``excluded``.

    ``"hard"`` samples from ``pool`` (filled up at random when it is short), ``"random"`` from
    the whole corpus, ``"mix"`` half (rounded up) from each.

    Raises
    ------
    ValueError
        Unknown mode, or the corpus has fewer than ``n`` documents outside ``excluded``.
    """
    if mode not in NEGATIVE_MODES:
        raise ValueError(f"unknown negatives mode {mode!r}; choose from {NEGATIVE_MODES}")
    if corpus_size - len(excluded) < n:
        raise ValueError(
            f"the corpus has {corpus_size} documents, too few for {n} negatives outside "
            f"{len(excluded)} positives; lower negatives"
        )
    n_hard = {"hard": n, "random": 0, "mix": (n + 1) // 2}[mode]
    n_hard = min(n_hard, len(pool))
    chosen = [int(p) for p in rng.choice(pool, size=n_hard, replace=False)] if n_hard else []
    taken = set(chosen) | excluded
    while len(chosen) < n:
        candidate = int(rng.integers(corpus_size))
        if candidate not in taken:
            chosen.append(candidate)
            taken.add(candidate)
    return chosen
