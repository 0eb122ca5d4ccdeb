"""Phrase queries against a substring oracle over the analyzer's token stream: a document
holds a phrase when the phrase's terms (``Analyzer.analyze``) occur as a run in the document's
terms (the same analyzer, written out here as a plain scan). Through ``BM25Index``, the live
``HybridIndex`` (every leg, batches of different phrases, mutations, merges, reloads), a
sharded index's shards, the CLI, and the on-disk format (corrupt positions are refused)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from hybrid_engine import Analyzer, AnalyzerConfig, BM25Index, HybridIndex, IndexFormatError
from hybrid_engine.lexical.phrases import quoted_phrases, unquoted
from hybrid_engine.result import PAD_ID

WORDS = "heart attack risk of the a in blood pressure high low cell cells running runs".split()
ANALYZERS = {
    "english": AnalyzerConfig(),
    "spanish": AnalyzerConfig.for_language("es"),
    "none": AnalyzerConfig(stemmer="none", stopwords=False),
    "cjk-bigram": AnalyzerConfig(cjk="bigram"),
}


def holds(tokens: Sequence[str], phrase: Sequence[str]) -> bool:
    """The oracle: ``phrase`` is a run of ``tokens`` (an empty phrase asks for nothing)."""
    m = len(phrase)
    return any(list(tokens[i : i + m]) == list(phrase) for i in range(len(tokens) - m + 1))


def oracle_mask(docs: Sequence[str], phrases: Sequence[str], analyzer: Analyzer) -> np.ndarray:
    streams = [analyzer.analyze(doc) for doc in docs]
    mask = np.ones(len(docs), dtype=bool)
    for phrase in phrases:
        mask &= [holds(stream, analyzer.analyze(phrase)) for stream in streams]
    return mask


def synthetic(n: int, seed: int) -> list[str]:
    """Documents of a small vocabulary (stopwords and stems included), so that phrases match
    often, partly, and out of order."""
    rng = random.Random(seed)
    extra = ["心臓発作", "la presión arterial alta", "las células corren", "El corazón"]
    return [
        " ".join(rng.choice(WORDS + extra) for _ in range(rng.randint(1, 30))) for _ in range(n)
    ]


def sampled_phrases(docs: Sequence[str], n: int, seed: int) -> list[str]:
    """Runs of 1-4 words cut from the documents, and as many shuffled ones."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = rng.choice(docs).split()
        start = rng.randrange(len(words))
        run = words[start : start + rng.randint(1, 4)]
        out.append(" ".join(run))
        rng.shuffle(run)
        out.append(" ".join(run))
    return out


@pytest.mark.parametrize("name", list(ANALYZERS))
def test_phrase_mask_equals_the_token_stream_oracle(name: str) -> None:
    config = ANALYZERS[name]
    docs = synthetic(400, seed=1)
    index = BM25Index.build(docs, analyzer=config, positions=True, batch_size=64)
    analyzer = Analyzer(config)
    phrases = [*sampled_phrases(docs, 150, seed=2), "the of a", "zzz unknown", "heart heart"]
    for phrase in phrases:
        expected = oracle_mask(docs, [phrase], analyzer)
        got = index.phrase_mask([phrase])
        if not analyzer.analyze(phrase):
            assert got is None, phrase  # only dropped words: asks for nothing
            continue
        assert np.array_equal(got, expected), phrase
    two = phrases[:2]
    assert np.array_equal(index.phrase_mask(two), oracle_mask(docs, two, analyzer))


def test_scifact_phrases_equal_the_oracle(shared_data: Path) -> None:
    from hybrid_engine.evaluation import load_beir

    corpus = load_beir(shared_data / "beir" / "scifact").corpus[:1500]
    docs = [doc["title"] + " " + doc["text"] for doc in corpus]
    index = BM25Index.build(docs, positions=True)
    analyzer = Analyzer()
    phrases = sampled_phrases(docs, 60, seed=3)
    assert sum(oracle_mask(docs, [p], analyzer).sum() > 1 for p in phrases) > 10
    for phrase in phrases:
        got = index.phrase_mask([phrase])
        expected = oracle_mask(docs, [phrase], analyzer)
        assert got is None if not analyzer.analyze(phrase) else np.array_equal(got, expected)


def test_quoted_phrases_are_parsed_from_the_query() -> None:
    assert quoted_phrases('"heart attack" risk') == ("heart attack",)
    assert quoted_phrases('“blood pressure” and "b a" "b a"') == ("b a", "blood pressure")
    assert quoted_phrases('open "quote') == ()
    assert quoted_phrases('empty "" and "  "') == ()
    assert quoted_phrases("no quotes") == ()
    query = '"heart attack" “risk”'
    assert Analyzer().analyze(unquoted(query)) == Analyzer().analyze(query)
    assert quoted_phrases(unquoted(query)) == ()


def _masked_ranking(index: BM25Index, query: str, mask: np.ndarray) -> list[int]:
    """The unquoted query's full ranking with the documents outside ``mask`` removed."""
    full = index.search(query.replace('"', " "), len(index))
    return [int(i) for i in full.ids[0] if i != PAD_ID and mask[i]]


def test_bm25_search_requires_the_quoted_phrases_and_keeps_bm25_scores() -> None:
    docs = synthetic(300, seed=4)
    index = BM25Index.build(docs, positions=True)
    analyzer = Analyzer()
    queries = [
        '"heart attack" risk',
        '"blood pressure" "high cell"',
        "plain heart",
        '"attack heart"',
    ]
    result = index.search(queries, k=len(docs))
    for row, query in enumerate(queries):
        mask = oracle_mask(docs, quoted_phrases(query), analyzer)
        got = [int(i) for i in result.ids[row] if i != PAD_ID]
        assert got == _masked_ranking(index, query, mask), query
    allowed = np.arange(len(docs)) % 2 == 0
    masked = index.search(queries[0], k=len(docs), allowed=allowed)
    expected = _masked_ranking(
        index, queries[0], oracle_mask(docs, ["heart attack"], analyzer) & allowed
    )
    assert [int(i) for i in masked.ids[0] if i != PAD_ID] == expected


def test_without_positions_quotes_are_punctuation() -> None:
    docs = synthetic(100, seed=5)
    index = BM25Index.build(docs)
    assert not index.has_positions
    result = index.search(['"heart attack" risk', "heart attack risk"], k=20)
    assert np.array_equal(result.ids[0], result.ids[1])
    assert np.array_equal(result.scores[0], result.scores[1])
    with pytest.raises(ValueError, match="positions=True"):
        index.phrase_mask(["heart attack"])


def test_positions_survive_save_and_load(tmp_path: Path) -> None:
    docs = synthetic(200, seed=6)
    index = BM25Index.build(docs, positions=True)
    index.save(tmp_path / "ix")
    manifest = json.loads((tmp_path / "ix" / "manifest.json").read_text())
    assert manifest["positions"] is True and manifest["format_version"] == 3
    for mmap in (False, True):
        loaded = BM25Index.load(tmp_path / "ix", mmap=mmap, verify=True)
        assert loaded.has_positions
        assert np.array_equal(
            loaded.phrase_mask(["heart attack"]), index.phrase_mask(["heart attack"])
        )


def _corrupt_positions(path: Path) -> None:
    """Every byte of the positions set to a continuation byte: no varint ends."""
    positions = np.load(path / "positions.npy")
    positions[:] = 0x80
    np.save(path / "positions.npy", positions)


def test_corrupt_positions_are_refused_never_read_past(tmp_path: Path) -> None:
    docs = synthetic(200, seed=7)
    BM25Index.build(docs, positions=True).save(tmp_path / "ix")
    _corrupt_positions(tmp_path / "ix")
    with pytest.raises(IndexFormatError):
        BM25Index.load(tmp_path / "ix", verify=True)  # the file hash, or the check
    loaded = BM25Index.load(tmp_path / "ix", verify=False)
    with pytest.raises(IndexFormatError, match="positions"):
        loaded.search('"heart attack"', 5)


def _docs(texts: Sequence[str], prefix: str = "d") -> list[dict[str, object]]:
    return [
        {"_id": f"{prefix}{i}", "text": text, "metadata": {"even": i % 2 == 0}}
        for i, text in enumerate(texts)
    ]


def _check_hybrid(engine: HybridIndex, queries: list[str], filter: dict | None = None) -> None:
    """Every hit of every leg holds the query's phrases (and the filter), and the BM25 leg is
    the unquoted BM25 ranking of the documents holding them."""
    analyzer = Analyzer()
    result = engine.search(queries, k=10, depth=50, filter=filter)
    assert result.legs is not None
    texts = result.snapshot.texts  # type: ignore[union-attr]
    for row, query in enumerate(queries):
        phrases = quoted_phrases(query)
        for leg in result.legs.values():
            for i in leg.ids[row]:
                if i != PAD_ID:
                    assert oracle_mask([texts[int(i)]], phrases, analyzer)[0], (
                        query,
                        texts[int(i)],
                    )
        for hit in result.hits()[row]:
            assert oracle_mask([hit.text], phrases, analyzer)[0]
            if filter is not None:
                assert hit.metadata["even"] is filter["even"]
        if phrases:
            one = engine.search(query, k=10, depth=50, filter=filter)
            assert one.doc_ids[0] == result.doc_ids[row]  # the batch answers as one query


def test_hybrid_phrases_narrow_every_leg_through_mutations(tmp_path: Path, encoder) -> None:
    engine = HybridIndex.build(
        _docs(synthetic(150, seed=8)),
        retrievers=("bm25", "dense"),
        encoder=encoder,
        bm25_options={"positions": True},
        dense_options={"exact_threshold": 10_000},
    )
    queries = ['"heart attack" risk', "blood pressure", '"high blood" cells', '"attack heart"', ""]
    _check_hybrid(engine, queries)
    _check_hybrid(engine, queries, filter={"even": True})
    engine.add(_docs(synthetic(60, seed=9), prefix="n"))
    engine.delete([f"d{i}" for i in range(0, 150, 3)])
    engine.commit()
    _check_hybrid(engine, queries)
    engine.merge()
    _check_hybrid(engine, queries)
    engine.save(tmp_path / "e")
    _check_hybrid(HybridIndex.load(tmp_path / "e", encoder=encoder), queries)


def test_hybrid_without_positions_reads_quotes_as_punctuation() -> None:
    engine = HybridIndex.build(_docs(synthetic(80, seed=10)), retrievers=("bm25",))
    quoted = engine.search('"heart attack" risk', k=10)
    plain = engine.search("heart attack risk", k=10)
    assert quoted.doc_ids == plain.doc_ids


def test_cli_index_positions_and_quoted_search(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    texts = synthetic(120, seed=11)
    corpus.write_text("".join(json.dumps(d) + "\n" for d in _docs(texts)))
    cli = [sys.executable, "-m", "hybrid_engine"]
    subprocess.run(
        [
            *cli,
            "index",
            str(corpus),
            str(tmp_path / "ix"),
            "--retrievers",
            "bm25",
            "--positions",
            "--quiet",
        ],
        check=True,
    )
    out = subprocess.run(
        [*cli, "search", str(tmp_path / "ix"), '"heart attack" risk', "-k", "50", "--json"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    expected = oracle_mask(texts, ["heart attack"], Analyzer())
    ids = [hit["id"] for hit in json.loads(out)["hits"]]
    info = subprocess.run(
        [*cli, "info", str(tmp_path / "ix"), "--json"], check=True, capture_output=True, text=True
    )
    assert json.loads(info.stdout)["phrases"] is True
    assert ids and all(expected[int(doc_id[1:])] for doc_id in ids)
    assert len(ids) == min(50, int(expected.sum()))


def test_the_server_reads_quoted_phrases() -> None:
    pytest.importorskip("fastapi", reason="the serve extra is not installed")
    from fastapi.testclient import TestClient

    from hybrid_engine.server import create_app

    texts = synthetic(120, seed=12)
    engine = HybridIndex.build(_docs(texts), retrievers=("bm25",), bm25_options={"positions": True})
    queries = ['"heart attack" risk', '"blood pressure"']
    expected = engine.search(queries, 10).doc_ids
    http = TestClient(create_app(engine))
    answer = http.post("/search", json={"queries": queries, "k": 10})
    assert answer.status_code == 200, answer.text
    got = [[hit["id"] for hit in row["hits"]] for row in answer.json()["results"]]
    assert got == expected
    mask = oracle_mask(texts, ["blood pressure"], Analyzer())
    assert got[1] and all(mask[int(doc_id[1:])] for doc_id in got[1])
