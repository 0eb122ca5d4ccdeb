"""Cross-encoder preparation: which sources are refused (no export run), and the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from hybrid_engine.cli import main
from hybrid_engine.errors import HybridEngineError
from hybrid_engine.models.export import cross_encoder as prepare
from hybrid_engine.models.export.common import Int8DroppedWarning


def _source(root: Path, **config) -> Path:
    root.mkdir()
    base = {
        "model_type": "bert",
        "architectures": ["BertForSequenceClassification"],
        "id2label": {"0": "LABEL_0"},
        "max_position_embeddings": 512,
    }
    (root / "config.json").write_text(json.dumps({**base, **config}))
    (root / "tokenizer.json").write_text("{}")
    (root / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 384}))
    (root / "model.safetensors").write_bytes(b"weights")
    return root


def test_settings_of_a_cross_encoder(tmp_path: Path) -> None:
    settings = prepare._source_settings(_source(tmp_path / "ce"))
    assert settings == {"max_length": 384, "num_labels": 1}  # the tokenizer's limit


def test_max_length_is_capped_at_512(tmp_path: Path) -> None:
    folder = _source(tmp_path / "ce", max_position_embeddings=2048)
    (folder / "tokenizer_config.json").write_text(json.dumps({"model_max_length": 10**30}))
    assert prepare._source_settings(folder)["max_length"] == 512


@pytest.mark.parametrize(
    ("config", "match"),
    [
        ({"model_type": "gpt2"}, "model_type 'gpt2' is not one of"),
        ({"architectures": ["BertModel"]}, r"lack a \.\.\.ForSequenceClassification"),
        ({"id2label": {"0": "no", "1": "yes"}}, "it has 2 labels, not one relevance logit"),
    ],
)
def test_other_models_are_refused(tmp_path: Path, config: dict, match: str) -> None:
    with pytest.raises(HybridEngineError, match=match):
        prepare._source_settings(_source(tmp_path / "ce", **config))


def test_missing_files_are_named(tmp_path: Path) -> None:
    folder = _source(tmp_path / "ce")
    (folder / "model.safetensors").unlink()
    (folder / "tokenizer.json").unlink()
    with pytest.raises(HybridEngineError, match=r"no tokenizer\.json.*none of the weight files"):
        prepare._source_settings(folder)
    with pytest.raises(HybridEngineError, match=r"has no config\.json"):
        prepare._source_settings(tmp_path)


def test_not_a_folder_and_bad_names(tmp_path: Path) -> None:
    with pytest.raises(HybridEngineError, match="is not a folder"):
        prepare.prepare_cross_encoder(tmp_path / "absent")
    with pytest.raises(HybridEngineError, match="plain folder name"):
        prepare.prepare_cross_encoder(_source(tmp_path / "ce"), name="../elsewhere")


def test_missing_export_extra_names_the_install(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "optimum.exporters.onnx", None)  # import fails
    with pytest.raises(HybridEngineError, match=r"pip install -e \"\.\[export\]\""):
        prepare.prepare_cross_encoder(_source(tmp_path / "ce"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_cli_refuses_a_bi_encoder_folder(tmp_path: Path, capsys) -> None:
    folder = _source(tmp_path / "st", architectures=["BertModel"])
    assert main(["models", "prepare-reranker", str(folder), "--quiet"]) == 2
    assert "not a cross-encoder with one output" in capsys.readouterr().err


def test_cli_keeps_a_prepared_folder(cross_encoder_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("HYBRID_ENGINE_MODELS", str(cross_encoder_path.parent))
    source = cross_encoder_path  # any folder: the prepared one is found first
    argv = ["models", "prepare-reranker", str(source), "--name", cross_encoder_path.name]
    assert main(argv) == 0
    assert "already prepared" in capsys.readouterr().out
    assert main(["models", "info", str(cross_encoder_path)]) == 0
    out = capsys.readouterr().out
    assert '"kind": "cross-encoder"' in out and '"training": {' in out


def test_the_int8_cross_encoder_agrees(cross_encoder_path: Path) -> None:
    """The MiniLM cross-encoder's int8 graph keeps the fp32 order of the check pairs."""
    manifest = json.loads((cross_encoder_path / "manifest.json").read_text())
    assert set(manifest["variants"]) == {"fp32", "int8"}
    check = manifest["export"]["int8_vs_fp32"]
    assert check["kept"] and check["int8_spearman"] >= prepare.MIN_INT8_SPEARMAN
    assert check["int8_max_diff_per_std"] <= prepare.MAX_INT8_DIFF_PER_STD


def test_an_agreeing_int8_cross_encoder_is_kept(
    tiny_cross_encoder_source: Path, tmp_path: Path, capsys
) -> None:
    from hybrid_engine.models.cross_encoder import CrossEncoder

    folder = prepare.prepare_cross_encoder(tiny_cross_encoder_source, tmp_path / "ce", log=print)
    assert "int8 vs fp32 ONNX: int8_spearman 0.9" in capsys.readouterr().out
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(manifest["variants"]) == {"fp32", "int8"}
    assert manifest["export"]["int8_vs_fp32"]["kept"]
    assert CrossEncoder.load(folder, variant="int8").score("q", ["a", "b"]).shape == (2,)


def test_a_broken_int8_cross_encoder_is_dropped(
    tiny_cross_encoder_source: Path, broken_int8, tmp_path: Path
) -> None:
    from hybrid_engine.models.cross_encoder import CrossEncoder
    from hybrid_engine.models.store import ModelNotFoundError

    with pytest.warns(Int8DroppedWarning, match="int8 variant disagrees with the fp32 graph"):
        folder = prepare.prepare_cross_encoder(tiny_cross_encoder_source, tmp_path / "ce")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(manifest["variants"]) == {"fp32"} and not (folder / "model_int8.onnx").exists()
    check = manifest["export"]["int8_vs_fp32"]
    assert not check["kept"] and check["int8_spearman"] < prepare.MIN_INT8_SPEARMAN
    with pytest.raises(ModelNotFoundError, match="dropped it because it disagreed"):
        CrossEncoder.load(folder, variant="int8")
    assert CrossEncoder.load(folder).score("q", ["a", "b"]).shape == (2,)
