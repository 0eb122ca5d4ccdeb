"""Fixtures of every on-disk format (tests/fixtures/formats/), read by this version.

Each fixture was written by the commit ``fixtures.json`` records: those of the current
versions by ``scripts/make_format_fixtures.py``, the hybrid format of before the live index
(``hybrid_engine.hybrid`` version 3) by commit 11d5cf1 itself, its versions 1 and 2 as the
manifest their layout documents. Current versions must load and give the oracles' results
(``NumpyBM25``, brute-force kNN, the SPLADE quantization from its definition, reciprocal rank
fusion written out below, PyTorch for the model); so must the older versions still read
(``hybrid_engine.bm25`` 1: ``bm25-v1/`` and the BM25 legs of the engine and live fixtures;
``hybrid_engine.segment`` 1: the segments of the engine and live fixtures, ``segment/`` being
the current version's);
others must be refused with a message naming their version and the rebuild command.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bm25_checks import compare_with_oracle, doc_text, oracle_for
from bm25_oracle import NumpyBM25
from dense_oracle import knn
from sparse_oracle import HashingSparseEncoder, dense_rows, quantized_matrix, top_k

from hybrid_engine import (
    Analyzer,
    BM25Index,
    DenseIndex,
    Encoder,
    HybridIndex,
    IndexFormatError,
    SpladeIndex,
)
from hybrid_engine.dense import format as dense_format
from hybrid_engine.lexical import format as lexical_format
from hybrid_engine.live import commits, segment
from hybrid_engine.models import store
from hybrid_engine.sparse import format as sparse_format

FIXTURES = Path(__file__).parent / "fixtures" / "formats"
CORPUS = json.loads((FIXTURES / "corpus.json").read_text(encoding="utf-8"))
DOCS: list[dict[str, str]] = CORPUS["documents"]
QUERIES: list[str] = CORPUS["queries"]
MODEL = FIXTURES / "models" / "tiny-bert"
SOURCE = FIXTURES / "tiny-bert-source"
RRF_K = 60
CURRENT = {
    "hybrid_engine.bm25": lexical_format.FORMAT_VERSION,
    "hybrid_engine.dense": dense_format.FORMAT_VERSION,
    "hybrid_engine.splade": sparse_format.FORMAT_VERSION,
    "hybrid_engine.model": store.FORMAT_VERSION,
    "hybrid_engine.live": commits.FORMAT_VERSION,
}


@pytest.fixture(scope="module")
def tiny() -> Encoder:
    """The fixture model (a random-weight BERT prepared by the project's export)."""
    return Encoder.load(MODEL, variant="fp32")


def _copy(name: str, tmp_path: Path) -> Path:
    """A writable copy of fixture ``name`` (loading a live index takes its lock and tidies
    it: the checked-in fixture must stay as it is)."""
    return Path(shutil.copytree(FIXTURES / name, tmp_path / name.replace("/", "-")))


def _provenance() -> dict[str, dict[str, Any]]:
    return json.loads((FIXTURES / "fixtures.json").read_text(encoding="utf-8"))


def test_every_fixture_records_its_format_version_and_commit() -> None:
    entries = _provenance()
    on_disk = {p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name != "models"}
    on_disk |= {f"models/{p.name}" for p in (FIXTURES / "models").iterdir()}
    assert set(entries) == on_disk
    for name, entry in entries.items():
        assert re.fullmatch(r"[0-9a-f]{40}", entry["commit"]), (name, entry["commit"])
        manifest = FIXTURES / name / "manifest.json"
        if entry["format"] == "hybrid_engine.live":
            points = sorted((FIXTURES / name).glob("commit-*.json"))
            manifest = points[-1]
        if not manifest.is_file():
            continue  # the source folder of the model: not a hybrid_engine format
        saved = json.loads(manifest.read_text(encoding="utf-8"))
        assert (saved["format"], saved["format_version"]) == (
            entry["format"],
            entry["format_version"],
        ), name
        if entry["format"] in CURRENT:
            if re.search(r"-v\d+$", name):  # an older version, kept: bm25-v1
                assert entry["format_version"] < CURRENT[entry["format"]], name
            else:
                assert entry["format_version"] == CURRENT[entry["format"]], name


# -- the legs -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bm25", "bm25-v2", "bm25-v1", "hybrid-v3/bm25"])
def test_bm25_fixture_equals_numpy_bm25(name: str, tmp_path: Path) -> None:
    index = BM25Index.load(_copy(name, tmp_path))
    oracle, analyzer = oracle_for(index, DOCS)
    tokens = [analyzer.analyze(query) for query in QUERIES]
    for k in (3, len(DOCS) + 5):
        compare_with_oracle(index.search(QUERIES, k), oracle, tokens, k)
    assert list(index.doc_ids) == [d["_id"] for d in DOCS]


@pytest.mark.parametrize(("name", "version"), [("bm25", 3), ("bm25-v2", 2), ("bm25-v1", 1)])
@pytest.mark.parametrize("mmap", [False, True])
def test_bm25_fixture_equals_a_fresh_build(
    name: str, version: int, mmap: bool, tmp_path: Path
) -> None:
    """Every version (the table saved or built at load; positions or none) finds every term
    and ranks like a build of today, memory-mapped or not; and saves as the current
    version."""
    path = _copy(name, tmp_path)
    assert json.loads((path / "manifest.json").read_text())["format_version"] == version
    index, built = BM25Index.load(path, mmap=mmap), BM25Index.build(DOCS)
    terms = list(built.terms)
    assert list(index.terms) == terms
    assert [index.term_id(t) for t in terms] == list(range(len(terms)))
    assert [index.term_id(t) for t in ("unseen", "", "café", terms[0] + "x")] == [-1] * 4
    for k in (3, len(DOCS) + 5):
        ours, expected = index.search(QUERIES, k), built.search(QUERIES, k)
        np.testing.assert_array_equal(ours.ids, expected.ids)
        np.testing.assert_array_equal(ours.scores, expected.scores)
    index.save(tmp_path / "again")
    saved = json.loads((tmp_path / "again" / "manifest.json").read_text())
    assert saved["format_version"] == lexical_format.FORMAT_VERSION


@pytest.mark.parametrize("verify", [False, True])
def test_bm25_fixture_positions_match_the_token_stream_oracle(verify: bool, tmp_path: Path) -> None:
    """Version 3's positions: each phrase's documents are those whose analysed terms hold
    the phrase's as a run (the oracle: a scan of ``Analyzer.analyze``); version 2 has none."""
    index = BM25Index.load(_copy("bm25", tmp_path), verify=verify)
    analyzer = Analyzer(index.analyzer)
    streams = [analyzer.analyze(doc_text(d)) for d in DOCS]
    assert index.has_positions and not BM25Index.load(_copy("bm25-v2", tmp_path)).has_positions
    phrases = [" ".join(stream[i : i + 2]) for stream in streams for i in range(len(stream) - 1)]
    phrases += [" ".join(reversed(stream[:2])) for stream in streams if len(stream) > 1]
    for phrase in phrases:
        terms = analyzer.analyze(phrase)
        expected = [
            any(s[i : i + len(terms)] == terms for i in range(len(s) - len(terms) + 1))
            for s in streams
        ]
        assert index.phrase_mask([phrase]).tolist() == expected, phrase


@pytest.mark.parametrize("name", ["dense", "dense-v1", "hybrid-v3/dense"])
@pytest.mark.parametrize("mmap", [False, True])
def test_dense_fixture_equals_brute_force_knn(
    name: str, mmap: bool, tiny: Encoder, tmp_path: Path
) -> None:
    """Every search (k = n: exact; k = 3: through the graph where there is one, on int8 codes
    in the current version) gives brute-force kNN of the model's vectors."""
    path = _copy(name, tmp_path)
    index = DenseIndex.load(path, encoder=tiny, mmap=mmap)  # its model_hash checked
    assert index.uses_graph == (name == "dense")
    assert index.quantization == ("int8" if name == "dense" else None)
    vectors = tiny.encode([doc_text(d) for d in DOCS])
    queries = tiny.encode(QUERIES)
    for k in (3, len(DOCS)):
        expected_ids, expected_scores = knn(vectors, queries, k, index.metric)
        result = index.search(QUERIES, k)
        np.testing.assert_array_equal(result.ids, expected_ids)
        np.testing.assert_allclose(result.scores, expected_scores, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mmap", [False, True])
def test_dense_format_1_graph_is_read_and_saved_as_the_current_version(
    mmap: bool, tmp_path: Path
) -> None:
    """Format 1's graph (hnswlib's file, a copy of the vectors among it): its links are taken
    out at load; searches find the brute-force neighbours, and a save writes format 2 (links
    only) that searches alike."""
    index = DenseIndex.load(_copy("dense-graph-v1", tmp_path), mmap=mmap)
    assert index.uses_graph and index.quantization is None
    vectors = np.load(FIXTURES / "dense-graph-v1" / "vectors.npy")
    queries = vectors[::10] + np.float32(0.05)
    truth, _ = knn(vectors, queries, 10, "cosine")
    found = index.search(queries, 10)
    assert np.mean([len(set(a) & set(b)) / 10 for a, b in zip(found.ids, truth)]) >= 0.95
    exact = index.search(queries, 10, exact=True)
    np.testing.assert_array_equal(exact.ids, truth)
    index.save(tmp_path / "again")
    saved = json.loads((tmp_path / "again" / "manifest.json").read_text())
    assert saved["format_version"] == dense_format.FORMAT_VERSION
    assert "graph.hnsw" not in saved["files"] and "links0.npy" in saved["files"]
    again = DenseIndex.load(tmp_path / "again")
    np.testing.assert_array_equal(again.search(queries, 10).ids, found.ids)


def test_splade_fixture_equals_the_quantized_dot_product(tmp_path: Path) -> None:
    encoder = HashingSparseEncoder()
    index = SpladeIndex.load(_copy("splade", tmp_path), encoder=encoder)
    docs, scale = quantized_matrix(dense_rows(encoder.encode([doc_text(d) for d in DOCS]), 64))
    queries = dense_rows(encoder.encode(QUERIES), 64)
    for k in (3, len(DOCS)):
        expected_ids, expected_scores = top_k(queries @ docs.T, k)
        result = index.search(encoder.encode(QUERIES), k)
        np.testing.assert_array_equal(result.ids, expected_ids)
        np.testing.assert_allclose(result.scores, expected_scores, rtol=1e-6)
    assert index.scale == pytest.approx(scale, rel=1e-12)


# -- the model folder -----------------------------------------------------------------------


def test_model_fixture_equals_its_pytorch_model() -> None:
    """The prepared folder's graphs against the source's PyTorch model, on the corpus, the
    queries and texts past ``max_length`` or outside the vocabulary."""
    torch = pytest.importorskip(
        "torch", reason="needs the export extra: pip install -e '.[export]'"
    )
    transformers = pytest.importorskip("transformers", reason="needs the export extra")
    manifest = json.loads((MODEL / "manifest.json").read_text(encoding="utf-8"))
    texts = [doc_text(d) for d in DOCS] + QUERIES + ["a", "Ébauche naïve café", "river " * 100]
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(SOURCE))
    model = transformers.AutoModel.from_pretrained(str(SOURCE), use_safetensors=True).eval()
    batch = tokenizer(
        texts,
        padding=True,
        truncation=True,
        max_length=manifest["max_length"],
        return_tensors="pt",
    )
    with torch.inference_mode():
        states = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).float()
    reference = ((states * mask).sum(1) / mask.sum(1)).numpy()
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    assert set(manifest["variants"]) >= {"fp32"}
    # int8: the quantization noise of a random 32-wide model (least 0.9725 measured here).
    floors = {"fp32": 0.9999, "int8": 0.95}
    for variant in manifest["variants"]:
        ours = Encoder.load(MODEL, variant=variant).encode(texts)
        assert ours.shape == (len(texts), manifest["dim"])
        cosine = (ours * reference).sum(axis=1)
        assert cosine.min() >= floors[variant], (variant, cosine.min(), int(cosine.argmin()))


def test_model_fixture_records_the_sha256_of_its_source_weights() -> None:
    manifest = json.loads((MODEL / "manifest.json").read_text(encoding="utf-8"))
    digest = hashlib.sha256((SOURCE / "model.safetensors").read_bytes()).hexdigest()
    assert manifest["source"]["weights_sha256"] == {"model.safetensors": digest}
    assert not list(SOURCE.glob("*.bin"))


# -- the engine and the live index ------------------------------------------------------------


def _rrf(docs: list[dict[str, str]], tiny: Encoder, k: int) -> list[list[str]]:
    """Reciprocal rank fusion (constant 60) of the exhaustive NumpyBM25 ranking and the
    brute-force cosine ranking of ``docs``, ties by position: the ids of each query's top k."""
    analyzer = Analyzer(BM25Index.build(docs).analyzer)  # the default analysis
    bm25 = NumpyBM25([analyzer.analyze(doc_text(d)) for d in docs], k1=0.9, b=0.4, method="lucene")
    dense_ids, _ = knn(
        tiny.encode([doc_text(d) for d in docs]), tiny.encode(QUERIES), len(docs), "cosine"
    )
    fused = []
    for q, query in enumerate(QUERIES):
        lexical, _ = bm25.top_k(analyzer.analyze(query), len(docs))
        scores: dict[int, float] = {}
        for ranking in (lexical, dense_ids[q]):
            for rank, position in enumerate(ranking, 1):
                scores[int(position)] = scores.get(int(position), 0.0) + 1.0 / (RRF_K + rank)
        order = sorted(scores, key=lambda p: (-np.float32(scores[p]), p))[:k]
        fused.append([docs[p]["_id"] for p in order])
    return fused


def _live_documents() -> list[dict[str, str]]:
    """The documents of the live fixture after its adds, deletes and upserts, in index order
    (an upserted document moves to the end)."""
    live = CORPUS["live"]
    by_id = {d["_id"]: d for d in DOCS}
    order = [*live["initial"], *live["added"]]
    docs = [by_id[i] for i in order if i not in set(live["deleted"])]
    replaced = {d["_id"] for d in live["upserted"]}
    return [d for d in docs if d["_id"] not in replaced] + live["upserted"]


def test_engine_fixture_loads_its_model_by_name_and_fuses_like_rrf(
    tiny: Encoder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    models = _copy("models", tmp_path)
    monkeypatch.setenv(store.MODELS_ENV, str(models))
    engine = HybridIndex.load(_copy("hybrid", tmp_path))  # no encoder: the recorded model
    with engine:
        result = engine.search(QUERIES, 10, fusion="rrf", depth=len(DOCS))
        assert result.doc_ids == _rrf(DOCS, tiny, 10)
        assert engine.retrievers == ("bm25", "dense")
        _assert_holds(engine, DOCS)  # texts and titles packed: segment version 1


def test_live_fixture_holds_its_live_documents_and_takes_new_commits(
    tiny: Encoder, tmp_path: Path
) -> None:
    path = _copy("live", tmp_path)
    docs = _live_documents()
    with HybridIndex.load(path, encoder=tiny) as engine:
        assert engine.num_segments > 1
        result = engine.search(QUERIES, 10, fusion="rrf", depth=len(docs))
        assert result.doc_ids == _rrf(docs, tiny, 10)
        extra = {"_id": "new", "title": "Moons", "text": "Jupiter has many moons and rings."}
        engine.add([extra])
        engine.commit()
    # Old segments keep their BM25 legs of version 1 and their packed texts (segment version
    # 1); the new one is of the current versions, its texts compressed.
    for leg, current in (("bm25/", lexical_format.FORMAT_VERSION), ("", segment.FORMAT_VERSION)):
        versions = [
            json.loads(saved.read_text())["format_version"]
            for saved in path.glob(f"seg-*/{leg}manifest.json")
        ]
        assert sorted(versions) == [1] * (len(versions) - 1) + [current]
    for mmap in (False, True):
        with HybridIndex.load(path, encoder=tiny, mmap=mmap) as engine:
            assert engine.search(QUERIES, 10, fusion="rrf", depth=30).doc_ids == _rrf(
                [*docs, extra], tiny, 10
            )
            _assert_holds(engine, [*docs, extra])
    # A merge rewrites the old segments' documents compressed.
    with HybridIndex.load(path, encoder=tiny) as engine:
        engine.merge()
    (saved,) = [json.loads(m.read_text()) for m in path.glob("seg-*/manifest.json")]
    assert saved["format_version"] == segment.FORMAT_VERSION
    with HybridIndex.load(path, encoder=tiny, mmap=True) as engine:
        assert engine.search(QUERIES, 10, fusion="rrf", depth=30).doc_ids == _rrf(
            [*docs, extra], tiny, 10
        )
        _assert_holds(engine, [*docs, extra])


def _assert_holds(engine: HybridIndex, docs: list[dict[str, str]]) -> None:
    """``engine``'s documents are ``docs``: ids, titles and texts, by ``get`` and as hits."""
    hits = engine.get([d["_id"] for d in docs])
    assert [(h.id, h.title, h.text) for h in hits] == [
        (d["_id"], d["title"], d["text"]) for d in docs
    ]
    by_id = {d["_id"]: d for d in docs}
    for row in engine.search(QUERIES, 5).hits():
        assert all((h.title, h.text) == (by_id[h.id]["title"], by_id[h.id]["text"]) for h in row)


@pytest.mark.parametrize("mmap", [False, True])
def test_segment_fixture_holds_its_texts_compressed_and_ranks_like_numpy_bm25(
    mmap: bool, tmp_path: Path
) -> None:
    """The fixture of the current segment format (texts and titles compressed)."""
    path = _copy("segment", tmp_path)
    (saved,) = [json.loads(m.read_text()) for m in path.glob("seg-*/manifest.json")]
    assert saved["format_version"] == segment.FORMAT_VERSION
    assert {"text_zframes.npy", "title_zframes.npy"} <= set(saved["files"])
    analyzer = Analyzer(BM25Index.build(DOCS).analyzer)  # the default analysis
    bm25 = NumpyBM25([analyzer.analyze(doc_text(d)) for d in DOCS], k1=0.9, b=0.4, method="lucene")
    with HybridIndex.load(path, mmap=mmap) as engine:
        assert engine.retrievers == ("bm25",)
        result = engine.search(QUERIES, len(DOCS))
        for q, query in enumerate(QUERIES):
            expected, _ = bm25.top_k(analyzer.analyze(query), len(DOCS))
            assert result.doc_ids[q] == [DOCS[int(p)]["_id"] for p in expected]
        _assert_holds(engine, DOCS)


def test_live_fixture_has_segments_and_deletion_masks() -> None:
    """Its segments are of version 1 (texts packed), which this version still reads."""
    point = commits.read_commit(FIXTURES / "live")
    assert sum(entry.num_deleted for entry in point.segments) >= len(CORPUS["live"]["deleted"])
    assert 1 in segment.OLDER_VERSIONS
    for entry in point.segments:
        saved = json.loads((FIXTURES / "live" / entry.name / "manifest.json").read_text())
        assert (saved["format"], saved["format_version"]) == (segment.FORMAT, 1)
        assert "text_bytes.npy" in saved["files"]


# -- older versions ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2, 3])
def test_the_immutable_hybrid_format_is_refused_naming_its_version_and_the_rebuild(
    version: int, tiny: Encoder, tmp_path: Path
) -> None:
    path = _copy(f"hybrid-v{version}", tmp_path)
    pattern = (
        rf"hybrid_engine\.hybrid version {version} .*reads hybrid_engine\.live version "
        rf"{commits.FORMAT_VERSION} only.*HybridIndex\.build\(corpus, \.\.\.\)\.save\(new_path\)"
        r".*`hybrid-engine index CORPUS NEW_PATH`"
    )
    with pytest.raises(IndexFormatError, match=pattern):
        HybridIndex.load(path, encoder=tiny)
