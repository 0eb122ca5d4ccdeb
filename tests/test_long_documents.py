"""The long-document set builder of benchmarks/long_documents.py: seeded, exact offsets, the
judged documents and their ids kept."""

import gzip
import importlib.util
import json
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[1]
_SPEC = importlib.util.spec_from_file_location(
    "long_documents", _ROOT / "benchmarks/long_documents.py"
)
assert _SPEC is not None and _SPEC.loader is not None
long_documents = importlib.util.module_from_spec(_SPEC)
sys.modules["long_documents"] = long_documents  # dataclasses look their module up
_SPEC.loader.exec_module(long_documents)

WIKIPEDIA = _ROOT.parent / "shared/data/scale/wikipedia_summaries_en/corpus.jsonl.gz"
CORPUS = [
    {"_id": "d1", "title": "Alpha", "text": "the first abstract about cells"},
    {"_id": "d2", "title": "", "text": "second one"},
    {"_id": "d3", "title": "Gamma", "text": "a third abstract with several more words in it"},
]
FILLERS = [f"filler number {i} says " + "word " * (i % 4 + 2) for i in range(12)]


def words(texts: list[str]) -> list[int]:
    """Whitespace tokens: an independent stand-in for the bi-encoder's counts."""
    return [len(t.split()) for t in texts]


def test_same_seed_same_documents_other_seed_others() -> None:
    one = long_documents.lengthen(CORPUS, FILLERS, words, seed=7, min_tokens=20, max_tokens=40)
    two = long_documents.lengthen(CORPUS, FILLERS, words, seed=7, min_tokens=20, max_tokens=40)
    other = long_documents.lengthen(CORPUS, FILLERS, words, seed=8, min_tokens=20, max_tokens=40)
    assert one == two
    assert one[0] != other[0]


def test_original_text_at_recorded_offset_and_counts() -> None:
    docs, placements = long_documents.lengthen(
        CORPUS, FILLERS, words, seed=3, min_tokens=20, max_tokens=40
    )
    for original, doc, place in zip(CORPUS, docs, placements, strict=True):
        text = original["text"]
        assert place.doc_id == doc["_id"] == original["_id"]
        assert doc["title"] == original["title"]
        assert doc["text"][place.offset : place.offset + len(text)] == text
        assert place.tokens_before == len(doc["text"][: place.offset].split())
        assert place.tokens == len(doc["text"].split())
        assert place.tokens >= 20
        parts = doc["text"].split(long_documents.SEPARATOR)
        fillers = [p for p in parts if p != text]
        assert len(fillers) == len(set(fillers)) == len(parts) - 1
        assert set(fillers) <= set(FILLERS)
        # The last filler drawn was needed: without it the target of at most 40 was not met.
        longest = max(len(f.split()) for f in fillers)
        assert place.tokens - longest < 40


def test_slots_vary_and_the_pool_bounds_a_document() -> None:
    many = [{"_id": str(i), "title": "", "text": f"abstract {i}"} for i in range(60)]
    _, placements = long_documents.lengthen(many, FILLERS, words, seed=0, min_tokens=30)
    assert len({p.tokens_before == 0 for p in placements}) == 2
    _, short = long_documents.lengthen(many[:1], FILLERS[:2], words, seed=0, min_tokens=500)
    assert short[0].tokens == 2 + sum(words(FILLERS[:2]))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="filler"):
        long_documents.lengthen(CORPUS, [], words, seed=0)
    with pytest.raises(ValueError, match="min_tokens"):
        long_documents.lengthen(CORPUS, FILLERS, words, seed=0, min_tokens=50, max_tokens=10)


def test_sample_keeps_every_judged_document_in_corpus_order() -> None:
    corpus = [{"_id": f"d{i}", "title": "", "text": "x"} for i in range(50)]
    qrels = {"q1": {"d40": 1, "d3": 2}, "q2": {"d17": 1, "missing": 1}}
    sample = long_documents.sample_documents(corpus, qrels, 10, seed=5)
    ids = [d["_id"] for d in sample]
    assert len(ids) == len(set(ids)) == 10
    assert {"d3", "d17", "d40"} <= set(ids)
    assert ids == sorted(ids, key=lambda i: int(i[1:]))
    assert sample == long_documents.sample_documents(corpus, qrels, 10, seed=5)
    assert len(long_documents.sample_documents(corpus, qrels, 500, seed=5)) == 50


def test_fillers_from_the_real_scale_file() -> None:
    with gzip.open(WIKIPEDIA, "rt", encoding="utf-8") as lines:
        first = [json.loads(next(lines))["text"] for _ in range(30)]
    texts = long_documents.read_fillers(WIKIPEDIA, 300, seed=1)
    assert texts == long_documents.read_fillers(WIKIPEDIA, 300, seed=1)
    assert len(set(texts)) == 300
    assert all(t.strip() for t in texts)
    # A uniform sample of 300 of ~10,000 texts, in file order: the file's first texts that
    # were drawn come first, in the file's order.
    drawn_first = [t for t in first if t in set(texts)]
    assert texts[: len(drawn_first)] == drawn_first
    with pytest.raises(ValueError, match="fewer"):
        long_documents.read_fillers(WIKIPEDIA, 10**6, seed=1)
