"""Highlights: the marked words are exactly those of the snippet the index's analyzer turns
into a query term (the analyzer's own tokens, checked word by word), stemmed and folded
matches mark the word as written, the snippet is a window of the text holding matches, HTML
is escaped; through the API and the server."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from hybrid_engine import Analyzer, AnalyzerConfig, HybridIndex
from hybrid_engine.pipeline.highlight import ELLIPSIS

FILLER = "filler words go here and there " * 12
DOCS = [
    {"_id": "en", "text": "The runner was running; he runs & <b>jumps</b>. " + FILLER + "Running!"},
    {"_id": "far", "text": FILLER + "a river of running stones " + FILLER},
    {"_id": "es", "text": "El ñandú corre por las montañas de la Patagonia."},
]
MARK = re.compile(r"<mark>(.*?)</mark>")


def _check(snippet: str, query: str, analyzer: Analyzer, text: str) -> None:
    """Every word of the snippet is marked iff the analyzer turns it into a query term, and
    the snippet without its marks is a stretch of the (escaped) text."""
    terms = set(analyzer.analyze(query))
    plain = html.unescape(snippet.replace("<mark>", "").replace("</mark>", ""))
    assert plain.strip(ELLIPSIS) in text
    marked = [html.unescape(word) for word in MARK.findall(snippet)]
    unmarked = MARK.sub(" ", snippet)
    for word in marked:
        assert set(analyzer.analyze(word)) & terms, word
    for word in re.findall(r"\w+", html.unescape(unmarked)):
        assert not set(analyzer.analyze(word)) & terms, word


@pytest.mark.parametrize(
    ("config", "query"),
    [(AnalyzerConfig(), "runs"), (AnalyzerConfig.for_language("es"), "ñandues montana")],
)
def test_marked_words_are_the_analyzers_matches(config: AnalyzerConfig, query: str) -> None:
    engine = HybridIndex.build(DOCS, retrievers=("bm25",), bm25_options={"analyzer": config})
    analyzer = Analyzer(config)
    result = engine.search(query, k=3)
    by_id = {doc["_id"]: doc["text"] for doc in DOCS}
    for hit, snippet in zip(result.hits()[0], result.highlights(chars=80)[0], strict=True):
        _check(snippet, query, analyzer, by_id[hit.id])
        assert "<mark>" in snippet  # every hit holds a query term (BM25 alone)


def test_the_window_goes_to_the_matches_and_escapes_html() -> None:
    engine = HybridIndex.build(DOCS, retrievers=("bm25",))
    result = engine.search(["runs", "river"], k=3)
    snippets = dict(zip([h.id for h in result.hits()[0]], result.highlights(chars=60)[0]))
    assert snippets["en"].startswith("The runner was <mark>running</mark>; he <mark>runs</mark>")
    assert "&lt;b&gt;jumps&lt;/b&gt;" in snippets["en"] and snippets["en"].endswith(ELLIPSIS)
    far = result.highlights(chars=60)[1][0]
    assert far.startswith(ELLIPSIS) and "<mark>river</mark>" in far
    raw = result.highlights(chars=1000, pre="[", post="]", escape=False)[0]
    assert "& <b>jumps</b>" in raw[0] and "[Running]!" in raw[0]


def test_a_dense_only_engine_highlights_with_the_default_analyzer() -> None:
    from dense_oracle import HashingEncoder

    engine = HybridIndex.build(DOCS, retrievers=("dense",), encoder=HashingEncoder())
    snippets = engine.search("stones", k=3).highlights()[0]
    assert any("<mark>stones</mark>" in s for s in snippets)
    with pytest.raises(ValueError, match="chars"):
        engine.search("stones", k=1).highlights(chars=0)


def test_the_server_sends_highlights_when_asked() -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from hybrid_engine.server import create_app

    engine = HybridIndex.build(DOCS, retrievers=("bm25",))
    http = TestClient(create_app(engine))
    body: dict[str, Any] = {"queries": ["runs", "river"], "k": 2, "highlight": True}
    answer = http.post("/search", json=body)
    assert answer.status_code == 200, answer.text
    expected = engine.search(["runs", "river"], k=2).highlights()
    got = [[hit["highlight"] for hit in r["hits"]] for r in answer.json()["results"]]
    assert got == expected
    plain = http.post("/search", json={"query": "runs", "k": 1}).json()["results"][0]["hits"][0]
    assert "highlight" not in plain


def test_parent_documents_highlight_their_best_chunk(model_path: Any) -> None:
    from tokenizers import Tokenizer

    from hybrid_engine.chunking import Chunker
    from hybrid_engine.parents import ParentDocumentIndex

    counter = Tokenizer.from_file(str(model_path / "tokenizer.json"))
    chunker = Chunker(counter, max_tokens=12, overlap_tokens=2)
    docs = [
        {"_id": "p0", "text": "Cats sleep all day. " * 6 + "The river stones are cold and wet."},
        {"_id": "p1", "text": "Dogs bark at the mail carrier. Rivers flood in the spring."},
    ]
    index = ParentDocumentIndex.build(docs, chunker=chunker, retrievers=("bm25",))
    result = index.search("river stones", k=2)
    analyzer = Analyzer()
    assert result.documents is not None
    for hit, snippet in zip(result.documents[0], result.highlights()[0], strict=True):
        start, end = hit.best_span
        assert any(s <= start and end <= e for s, e in hit.spans)  # one of its chunks
        _check(snippet, "river stones", analyzer, hit.text[start:end])
        assert "<mark>" in snippet
    chunks = index.search("river stones", k=2, unit="chunks")
    assert chunks.chunks is not None
    for chunk, snippet in zip(chunks.chunks[0], chunks.highlights()[0], strict=True):
        _check(snippet, "river stones", analyzer, chunk.text)
