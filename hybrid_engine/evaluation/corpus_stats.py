"""Statistics of a corpus that the rule-based stack recommendation reads: its size, its
documents' length in tokens and its share of identifier-like tokens."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass

import numpy as np

from hybrid_engine.corpus import Document, document_text

TOKEN = re.compile(r"\S+")
"""A token: a run of non-space characters (punctuation around it is stripped, ``EDGE``)."""
EDGE = "\"'()[]{}<>.,;:!?\u00ab\u00bb\u201c\u201d\u2018\u2019"
"""Characters stripped from both ends of a token before it is classified: ``"(E1234),"``
counts as ``E1234`` (the curly and angle quotes too)."""
IDENTIFIER = re.compile(
    r"""
    (?=[\w./:-]*[0-9])(?=[\w./:-]*[a-z])   # letters and digits mixed, alone or in groups
    [a-z0-9]+(?:[-_./:][a-z0-9]+)*          #   joined by - _ . / : (E1234, SKU-4411-B,
                                            #   ORA-00942, 0x1F, 3f2a9c1b, v2.1, x86_64)
    | [0-9]+(?:[-_/:][0-9]+)+               # digit groups joined by - _ / : (555-0199, 12/07)
    """,
    re.IGNORECASE | re.VERBOSE,
)
"""An identifier-like token (matched whole, after ``EDGE`` is stripped): ASCII letters and
digits mixed, alone or in groups joined by ``-``, ``_``, ``.``, ``/`` or ``:`` (codes, SKUs,
error numbers, hex literals and hashes, versions, gene names such as BRCA1); or digit groups
joined by ``-``, ``_``, ``/`` or ``:`` (part and phone numbers, dates). A plain word
(``protein``, ``x-ray``) or a plain number (``1984``, ``3.5``) is not one. These are the
tokens a bi-encoder's subword vocabulary blurs and BM25 matches exactly."""


@dataclass(frozen=True)
class CorpusStatistics:
    """What the rules read of a corpus.

    Attributes
    ----------
    n_documents : int
        Documents, blank ones included.
    n_tokens : int
        Tokens (``TOKEN``) of every document's title and text.
    mean_tokens, median_tokens : float
        Tokens per document.
    identifier_share : float
        Identifier-like tokens (``IDENTIFIER``) over all tokens; 0 for a corpus without tokens.
    """

    n_documents: int
    n_tokens: int
    mean_tokens: float
    median_tokens: float
    identifier_share: float

    def to_dict(self) -> dict[str, float]:
        """The fields by name."""
        return asdict(self)


def is_identifier(token: str) -> bool:
    """Whether ``token`` (``EDGE`` characters around it stripped) is identifier-like
    (``IDENTIFIER``)."""
    return IDENTIFIER.fullmatch(token.strip(EDGE)) is not None


def corpus_statistics(corpus: Iterable[Document]) -> CorpusStatistics:
    """Size, token lengths and identifier share of ``corpus``.

    Parameters
    ----------
    corpus : iterable of str or dict
        Documents as in ``BM25Index.build`` (a dict's title and text both count).

    Raises
    ------
    ValueError
        The corpus is empty.
    """
    lengths: list[int] = []
    identifiers = 0
    for i, doc in enumerate(corpus):
        tokens = TOKEN.findall(document_text(doc, i)[0])
        lengths.append(len(tokens))
        identifiers += sum(is_identifier(token) for token in tokens)
    if not lengths:
        raise ValueError("the corpus is empty; give at least one document")
    n_tokens = sum(lengths)
    return CorpusStatistics(
        n_documents=len(lengths),
        n_tokens=n_tokens,
        mean_tokens=n_tokens / len(lengths),
        median_tokens=float(np.median(lengths)),
        identifier_share=identifiers / n_tokens if n_tokens else 0.0,
    )
