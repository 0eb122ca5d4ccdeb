"""The RM3 relevance model: feedback documents' terms weighted by their first-pass scores,
interpolated with the query (Abdul-Jaleel et al., TREC 2004; the recipe of Anserini's
``Rm3Reranker``). Pure Python over analysed terms."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence


def document_model(
    terms: Sequence[str], fb_terms: int, keep: Callable[[str], bool]
) -> dict[str, float]:
    """``P(w|D)`` of one feedback document over its ``fb_terms`` most frequent kept terms.

    Parameters
    ----------
    terms : sequence of str
        The document's analysed terms, in order, repeats kept.
    fb_terms : int
        Terms kept, >= 1: the most frequent, ties by first occurrence in the document.
    keep : callable
        Whether a term may be a feedback term (RM3 drops terms in too many documents).

    Returns
    -------
    dict of str to float
        ``tf(w) / sum of the kept terms' tf`` for each kept term; empty when no term is kept.
    """
    counts = Counter(term for term in terms if keep(term))  # insertion order: first occurrence
    top = sorted(counts.items(), key=lambda item: -item[1])[:fb_terms]  # stable: ties in order
    total = sum(tf for _, tf in top)
    return {term: tf / total for term, tf in top}


def rm3_query(
    query_terms: Sequence[str],
    feedback: Sequence[Sequence[str]],
    scores: Sequence[float],
    *,
    fb_terms: int,
    original_weight: float,
    keep: Callable[[str], bool],
) -> dict[str, float]:
    """The RM3 query: the relevance model of the feedback documents mixed with the query.

    The query model is ``count(w in query) / len(query)``. The relevance model is ``sum over
    feedback documents D of P(w|D) * P(D|q)`` (``document_model``; ``P(D|q)`` the document's
    first-pass score over the feedback documents' total), cut to its ``fb_terms`` heaviest
    terms (ties by term, ascending) and scaled to sum 1. The result weighs each term
    ``original_weight * P(w|query) + (1 - original_weight) * P(w|relevance model)``; with no
    feedback term (no feedback document, or none with a kept term) it is the query model.

    Parameters
    ----------
    query_terms : sequence of str
        The query's analysed terms, repeats kept; empty for a blank query.
    feedback : sequence of sequence of str
        The analysed terms of each feedback document, best first.
    scores : sequence of float
        Each feedback document's first-pass score, > 0.
    fb_terms : int
        Terms of each document model and of the relevance model, >= 1.
    original_weight : float
        The query model's share, in [0, 1].
    keep : callable
        Whether a term may be a feedback term.

    Returns
    -------
    dict of str to float
        Term to weight, every weight > 0 (terms weighted 0 are left out); empty for an empty
        query.
    """
    if not query_terms:
        return {}
    query = {term: count / len(query_terms) for term, count in Counter(query_terms).items()}
    total_score = sum(scores)
    relevance: dict[str, float] = {}
    for terms, score in zip(feedback, scores, strict=True):
        for term, p in document_model(terms, fb_terms, keep).items():
            relevance[term] = relevance.get(term, 0.0) + p * score / total_score
    top = sorted(relevance.items(), key=lambda item: (-item[1], item[0]))[:fb_terms]
    mass = sum(weight for _, weight in top)
    if mass == 0.0:
        return query
    mixed = {term: original_weight * p for term, p in query.items()}
    for term, weight in top:
        mixed[term] = mixed.get(term, 0.0) + (1.0 - original_weight) * weight / mass
    return {term: weight for term, weight in mixed.items() if weight > 0.0}
