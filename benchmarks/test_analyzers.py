"""Indexing throughput of each language's analyzer against the English one, on the same texts.

For each language, ``analyzer_corpus.zipf_corpus`` draws texts of 60 of its words (Zipf over
its Snowball vocabulary: all of it when ``SNOWBALL_DATA`` names a snowball-data checkout, else
the 2,000-word test sample): 20,000 texts, and 200,000 in the ``scale`` lane. ``BM25Index.build``
indexes them twice in the same run: with ``AnalyzerConfig(stemmer=language)`` (Snowball
stemming and stopwords of each distinct word, ``lexical.word_terms``, then the postings merged,
``IndexBuilder.finish_mapped``) and with the default English analyzer (all in C++). The ratio
``<language>_over_english`` is the median build time of the language's analyzer over the
English one's. The language's extra work is per distinct word, so the ratio falls as a corpus
grows past its vocabulary. Numba compilation is warmed up before any timing.
"""

from __future__ import annotations

import pytest
from analyzer_corpus import zipf_corpus
from bench_common import record_ratio

from hybrid_engine import AnalyzerConfig, BM25Index

LANGUAGES = ["spanish", "portuguese", "french", "german", "italian", "dutch", "swedish",
             "russian", "turkish", "finnish", "greek", "hindi"]  # fmt: skip
SIZES = [20_000, pytest.param(200_000, marks=pytest.mark.scale)]


@pytest.fixture(scope="module", autouse=True)
def warm() -> None:
    texts = zipf_corpus("spanish", 200)
    BM25Index.build(texts, analyzer=AnalyzerConfig(stemmer="spanish"))
    BM25Index.build(texts)


CORPORA: dict[tuple[str, int], list[str]] = {}


def corpus(language: str, n_docs: int) -> list[str]:
    """The texts of one group, drawn once for both of its sides."""
    if (language, n_docs) not in CORPORA:
        CORPORA.clear()
        CORPORA[language, n_docs] = zipf_corpus(language, n_docs)
    return CORPORA[language, n_docs]


@pytest.mark.parametrize("analyzer", ["english", "language"])
@pytest.mark.parametrize("n_docs", SIZES)
@pytest.mark.parametrize("language", LANGUAGES)
def test_analyzer_build(benchmark, language: str, n_docs: int, analyzer: str) -> None:
    group = f"analyzer-{language}-{n_docs // 1000}k"
    benchmark.group = group
    config = AnalyzerConfig(stemmer=language) if analyzer == "language" else AnalyzerConfig()
    texts = corpus(language, n_docs)
    index = benchmark.pedantic(
        BM25Index.build, args=(texts,), kwargs={"analyzer": config}, rounds=3, iterations=1
    )
    assert index.num_documents == n_docs
    record_ratio(benchmark, group, language if analyzer == "language" else "english",
                 reference="english")  # fmt: skip
