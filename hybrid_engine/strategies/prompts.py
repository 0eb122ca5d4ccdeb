"""Every prompt the query strategies send to a generator, in one frozen dataclass.

The default local generator is a small *base* model (Gemma 3 270M), which continues text
rather than following instructions: each template ends where the wanted output begins, with
one worked example where the format matters (sub-queries, filters).
"""

from __future__ import annotations

from dataclasses import dataclass

HYDE = "Question: {question}\nA passage from a scientific article that answers it:\n"

DECOMPOSE = (
    "Break a question into short search queries, one per line.\n\n"
    "Question: Does vitamin D intake lower the risk of fractures in older women?\n"
    "Search queries:\n"
    "1. vitamin D supplementation fracture risk\n"
    "2. bone density in older women\n"
    "3. vitamin D and falls in the elderly\n\n"
    "Question: {question}\n"
    "Search queries:\n"
    "1."
)

MULTI_HOP = (
    "Question: {question}\n\n"
    "Passages found so far:\n{passages}\n\n"
    "If these passages answer the question, write {stop}. Otherwise write one short search "
    "query for the information that is still missing.\n"
    "Answer:"
)

SELF_QUERY = (
    "Documents have these metadata fields:\n{schema}\n\n"
    "Write a JSON filter for the question using only these fields, or {{}} if the question "
    "names none.\n\n"
    "Question: {example_question}\n"
    "Filter: {example_filter}\n\n"
    "Question: {question}\n"
    "Filter:"
)


@dataclass(frozen=True)
class Prompts:
    """The templates of the strategies, ``str.format`` fields in braces.

    Override one per call: ``hyde(..., prompts=Prompts(hyde="..."))`` or
    ``dataclasses.replace(PROMPTS, decompose="...")``.

    Attributes
    ----------
    hyde : str
        ``{question}``: the question; the output is one hypothetical passage.
    decompose : str
        ``{question}``; the output is search queries, one per line (numbering is stripped).
    multi_hop : str
        ``{question}``, ``{passages}`` (the top passages, numbered, truncated) and ``{stop}``
        (the stop word); the output is a follow-up query or the stop word.
    self_query : str
        ``{schema}`` (the fields, one per line), ``{example_question}`` and
        ``{example_filter}`` (a worked example built from the schema) and ``{question}``; the
        output is a JSON filter.
    """

    hyde: str = HYDE
    decompose: str = DECOMPOSE
    multi_hop: str = MULTI_HOP
    self_query: str = SELF_QUERY


PROMPTS = Prompts()
"""The default prompts."""
