"""A long-document test collection built from a judged one: each document's text placed at a
seeded random position among unrelated filler texts, its title, id, queries and qrels kept.

``scifact-long`` (``chunking_report.py``): SciFact's test queries and qrels; a seeded sample of
its documents (every judged one kept), each ``text`` set among Wikipedia summaries sampled
from the shared scale corpus (``../shared/data/scale/wikipedia_summaries_en/corpus.jsonl.gz``,
read in place) until the document holds ``min_tokens``-``max_tokens`` bi-encoder tokens, so
that the original abstract often lies past the bi-encoder's 256-token window.

Construction of one document, with ``rng = numpy.random.default_rng(seed)`` drawn in corpus
order: a target length ``T = rng.integers(min_tokens, max_tokens + 1)``; filler texts drawn
uniformly from the pool (no repeat within a document) until the abstract's tokens plus the
fillers' reach ``T``; the abstract's slot ``rng.integers(0, k + 1)`` among the ``k`` fillers;
the parts joined by ``SEPARATOR``. Token counts are the bi-encoder tokenizer's, special
tokens not counted, summed over the parts.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

SEPARATOR = "\n\n"
"""Between the parts of a long document: a paragraph break."""
WIKIPEDIA = Path("../shared/data/scale/wikipedia_summaries_en/corpus.jsonl.gz")
"""The filler texts' source, relative to the repository root."""


@dataclass(frozen=True)
class Placement:
    """Where a document's original text lies in its long version.

    Attributes
    ----------
    doc_id : str
        The document's ``_id``.
    offset : int
        Character offset: ``long_text[offset:offset + len(text)] == text``.
    tokens_before : int
        Tokens of the filler texts before it (separators add none).
    tokens : int
        Tokens of the whole long text, summed over its parts.
    """

    doc_id: str
    offset: int
    tokens_before: int
    tokens: int


def read_fillers(path: Path, n: int, seed: int) -> list[str]:
    """``n`` distinct non-blank ``text`` values of a gzip JSONL corpus, a seeded uniform sample
    in file order.

    Raises
    ------
    FileNotFoundError
        ``path`` is missing (it is read in place from the shared data folder).
    ValueError
        The file holds fewer than ``n`` non-blank texts.
    """
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        texts = [t for t in (json.loads(line).get("text", "") for line in lines) if t.strip()]
    if len(texts) < n:
        raise ValueError(f"{path} holds {len(texts)} non-blank texts, fewer than the {n} asked")
    chosen = np.sort(np.random.default_rng(seed).choice(len(texts), size=n, replace=False))
    return [texts[i] for i in chosen]


def sample_documents(
    corpus: Sequence[dict[str, Any]], qrels: Mapping[str, Mapping[str, int]], n: int, seed: int
) -> list[dict[str, Any]]:
    """Every judged document of ``corpus`` plus a seeded uniform sample of the others, ``n``
    in all (all of them when fewer), in corpus order."""
    judged = {doc_id for grades in qrels.values() for doc_id in grades}
    keep = [i for i, doc in enumerate(corpus) if doc["_id"] in judged]
    others = [i for i, doc in enumerate(corpus) if doc["_id"] not in judged]
    room = max(0, min(n - len(keep), len(others)))
    drawn = np.random.default_rng(seed).choice(len(others), size=room, replace=False)
    chosen = sorted(keep + [others[i] for i in drawn])
    return [corpus[i] for i in chosen]


def lengthen(
    corpus: Sequence[dict[str, Any]],
    fillers: Sequence[str],
    count: Callable[[list[str]], list[int]],
    *,
    seed: int,
    min_tokens: int = 1000,
    max_tokens: int = 2000,
) -> tuple[list[dict[str, Any]], list[Placement]]:
    """Each document's ``text`` set at a seeded random position among filler texts.

    Parameters
    ----------
    corpus : sequence of dict
        ``{"_id", "title", "text"}`` documents; ids and titles are kept.
    fillers : sequence of str
        The pool of filler texts, at least one; a document never repeats one.
    count : callable
        Token counts of a list of texts (e.g. ``chunking.tokens.count_each`` with the
        bi-encoder's tokenizer).
    seed : int
        Seed of the draws; the same inputs and seed give the same documents.
    min_tokens, max_tokens : int
        Bounds of each document's target length in tokens, ``1 <= min_tokens <= max_tokens``.
        A document ends at the first filler that brings it to its target (so it may pass
        ``max_tokens`` by less than one filler), or when the pool is used up.

    Returns
    -------
    (list of dict, list of Placement)
        The long documents in corpus order, and where each original text lies in its own.

    Raises
    ------
    ValueError
        ``fillers`` is empty or the bounds are out of order.
    """
    if not fillers:
        raise ValueError("no filler texts: pass at least one")
    if not 1 <= min_tokens <= max_tokens:
        raise ValueError(f"need 1 <= min_tokens <= max_tokens, got {min_tokens}, {max_tokens}")
    filler_tokens = count(list(fillers))
    text_tokens = count([doc.get("text", "") for doc in corpus])
    rng = np.random.default_rng(seed)
    documents, placements = [], []
    for doc, own in zip(corpus, text_tokens, strict=True):
        target = int(rng.integers(min_tokens, max_tokens + 1))
        chosen: list[int] = []
        total = own
        while total < target and len(chosen) < len(fillers):
            pick = int(rng.integers(len(fillers)))
            if pick not in chosen:
                chosen.append(pick)
                total += filler_tokens[pick]
        slot = int(rng.integers(0, len(chosen) + 1))
        before = [fillers[i] for i in chosen[:slot]]
        parts = [*before, doc.get("text", ""), *(fillers[i] for i in chosen[slot:])]
        offset = sum(len(p) + len(SEPARATOR) for p in before)
        documents.append({**doc, "text": SEPARATOR.join(parts)})
        before_tokens = sum(filler_tokens[i] for i in chosen[:slot])
        placements.append(Placement(doc["_id"], offset, before_tokens, total))
    return documents, placements
