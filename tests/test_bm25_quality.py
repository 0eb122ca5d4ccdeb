"""Retrieval quality on the shared BEIR-layout collections: the published BM25 level on scifact,
and parity with bm25s (the independent reference, run here with the same settings)."""

from __future__ import annotations

import pytest

from hybrid_engine import AnalyzerConfig, BM25Index
from hybrid_engine.evaluation import evaluate, load_beir, run_from_results

pytestmark = pytest.mark.slow

COLLECTIONS = ["scifact", "cranfield", "cisi", "med", "nfcorpus-partial"]


def dataset(shared_data, name: str):
    folder = shared_data / "beir" / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent")
    return load_beir(folder)


def ndcg10(index: BM25Index, ds) -> float:
    query_ids = list(ds.queries)
    result = index.search([ds.queries[q] for q in query_ids], 10)
    run = run_from_results(result.ids, result.scores, query_ids, index.doc_ids)
    return evaluate(run, ds.qrels, ["ndcg@10"])["ndcg@10"]


def bm25s_ndcg10(ds) -> float:
    """bm25s Lucene BM25, k1=0.9, b=0.4, its 33 English stopwords, Snowball stemmer."""
    bm25s = pytest.importorskip("bm25s")
    stemmer = pytest.importorskip("Stemmer").Stemmer("english")
    texts = [f"{d['title']} {d['text']}" if d["title"] else d["text"] for d in ds.corpus]
    retriever = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    retriever.index(
        bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
        show_progress=False,
    )
    query_ids = list(ds.queries)
    query_tokens = bm25s.tokenize(
        [ds.queries[q] for q in query_ids],
        stopwords="en",
        stemmer=stemmer,
        return_ids=False,
        show_progress=False,
    )
    ids, scores = retriever.retrieve(query_tokens, k=10, show_progress=False, n_threads=1)
    run = run_from_results(ids, scores, query_ids, [d["_id"] for d in ds.corpus])
    return evaluate(run, ds.qrels, ["ndcg@10"])["ndcg@10"]


def test_scifact_defaults_reach_published_bm25(shared_data) -> None:
    ds = dataset(shared_data, "scifact")
    figure = ndcg10(BM25Index.build(ds.corpus), ds)
    print(f"\nscifact BM25 defaults (lucene k1=0.9 b=0.4) nDCG@10 = {figure:.4f} (floor 0.670)")
    assert figure >= 0.670


@pytest.mark.parametrize("name", COLLECTIONS)
def test_parity_with_bm25s(shared_data, name: str) -> None:
    ds = dataset(shared_data, name)
    reference = bm25s_ndcg10(ds)
    parity = ndcg10(BM25Index.build(ds.corpus, analyzer=AnalyzerConfig(strip_accents=False)), ds)
    default = ndcg10(BM25Index.build(ds.corpus), ds)
    print(
        f"\n{name:<17} nDCG@10  bm25s {reference:.4f}  ours(strip_accents=False) {parity:.4f}  "
        f"ours(default) {default:.4f}  diff {parity - reference:+.4f}"
    )
    assert abs(parity - reference) <= 0.01
    assert abs(default - reference) <= 0.02
