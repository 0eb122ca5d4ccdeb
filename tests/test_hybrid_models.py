"""A saved HybridIndex records the model (name and variant) of each model leg, and
``HybridIndex.load`` loads that model by default: an index built with int8 models loads with
them without being told."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from dense_oracle import HashingEncoder
from sparse_oracle import HashingSparseEncoder

from hybrid_engine import HybridIndex, ModelNotFoundError, SearchResult
from hybrid_engine.errors import IndexFormatError
from hybrid_engine.models.bi_encoder import Encoder
from hybrid_engine.models.splade import SpladeEncoder
from hybrid_engine.models.store import DEFAULT_MODEL, SPLADE_MODEL

CORPUS = [
    "vitamin d deficiency and multiple sclerosis",
    "cats sleep most of the day",
    "the stock market fell sharply",
    "rivers carry stones to the sea",
    "snow and wind over the mountains",
    "a fire burned through the forest",
]
QUERIES = ["multiple sclerosis", "falling markets", "mountain weather"]


def assert_same(got: SearchResult, expected: SearchResult) -> None:
    np.testing.assert_array_equal(got.ids, expected.ids)
    np.testing.assert_array_equal(got.scores, expected.scores)


COMMIT = "commit-00000001.json"
"""The commit point an engine's first ``save`` writes."""


def manifest(path: Path) -> dict:
    """The engine settings of the index's commit point."""
    return json.loads((path / COMMIT).read_text())["config"]


def rewrite(path: Path, config: dict) -> None:
    point = json.loads((path / COMMIT).read_text())
    point["config"] = config
    (path / COMMIT).write_text(json.dumps(point))


def test_int8_models_are_recorded_and_loaded_by_default(
    model_path: Path, splade_path: Path, tmp_path: Path
) -> None:
    encoder = Encoder.load(model_path, variant="int8", num_threads=1)
    splade = SpladeEncoder.load(splade_path, variant="int8", num_threads=1)
    engine = HybridIndex.build(
        CORPUS, retrievers=("bm25", "dense", "splade"), encoder=encoder, splade_encoder=splade
    )
    engine.save(tmp_path / "int8")
    assert manifest(tmp_path / "int8")["models"] == {
        "dense": {"name": DEFAULT_MODEL, "variant": "int8"},
        "splade": {"name": SPLADE_MODEL, "variant": "int8"},
    }
    loaded = HybridIndex.load(tmp_path / "int8", num_threads=1)  # no encoders given
    assert (loaded.dense.encoder.name, loaded.dense.encoder.variant) == (DEFAULT_MODEL, "int8")
    assert (loaded.splade.encoder.name, loaded.splade.encoder.variant) == (SPLADE_MODEL, "int8")
    assert_same(loaded.search(QUERIES, 4), engine.search(QUERIES, 4))
    # An encoder given explicitly is still used, and checked against the index's model.
    again = HybridIndex.load(tmp_path / "int8", encoder=encoder, splade_encoder=splade)
    assert again.dense.encoder is encoder
    with pytest.raises(ValueError, match="built by the model"):
        HybridIndex.load(
            tmp_path / "int8", encoder=Encoder.load(model_path, variant="fp32", num_threads=1)
        )


def test_an_index_without_its_model_record_is_refused(model_path: Path, tmp_path: Path) -> None:
    """Every index of this format records its models: one without is corrupt, not guessed at."""
    engine = HybridIndex.build(CORPUS, encoder=Encoder.load(model_path, num_threads=1))
    engine.save(tmp_path / "idx")
    data = manifest(tmp_path / "idx")
    del data["models"]["dense"]
    rewrite(tmp_path / "idx", data)
    with pytest.raises(IndexFormatError, match="models records no model of the dense leg"):
        HybridIndex.load(tmp_path / "idx", num_threads=1)


def test_custom_encoders_are_recorded_as_none(tmp_path: Path) -> None:
    engine = HybridIndex.build(
        CORPUS,
        retrievers=("bm25", "dense", "splade"),
        encoder=HashingEncoder(),
        splade_encoder=HashingSparseEncoder(),
    )
    engine.save(tmp_path / "custom")
    assert manifest(tmp_path / "custom")["models"] == {"dense": None, "splade": None}
    with pytest.raises(ValueError, match="the dense leg was built with an encoder that is not a"):
        HybridIndex.load(tmp_path / "custom")
    with pytest.raises(ValueError, match=r"pass splade_encoder= to HybridIndex\.load"):
        HybridIndex.load(tmp_path / "custom", encoder=HashingEncoder())
    loaded = HybridIndex.load(
        tmp_path / "custom", encoder=HashingEncoder(), splade_encoder=HashingSparseEncoder()
    )
    assert_same(loaded.search(QUERIES, 4), engine.search(QUERIES, 4))


@pytest.mark.parametrize(
    ("record", "error", "match"),
    [
        (
            {"dense": {"name": "not-prepared-here", "variant": "fp32"}},
            ModelNotFoundError,
            "built with the dense model 'not-prepared-here' \\(fp32\\).*pass encoder=",
        ),
        ({"dense": {"name": "x"}}, IndexFormatError, "bad commit point"),
        ({"dense": {"name": "x", "variant": "int4"}}, IndexFormatError, "bad commit point"),
        ({"dense": ["x", "fp32"]}, IndexFormatError, "bad commit point"),
        ([], IndexFormatError, "bad commit point"),
    ],
)
def test_bad_or_missing_records(tmp_path: Path, record, error, match: str) -> None:
    HybridIndex.build(CORPUS, encoder=HashingEncoder()).save(tmp_path / "h")
    data = manifest(tmp_path / "h")
    data["models"] = record
    rewrite(tmp_path / "h", data)
    with pytest.raises(error, match=match):
        HybridIndex.load(tmp_path / "h")
